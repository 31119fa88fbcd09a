//! What keeps several dockets on one PostgreSQL database working as one: a single poller, under a
//! role the database hands out, and wake-ups relayed from every process's commits.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::config::Config;
use crate::domain::retry::backoff_jittered;
use crate::domain::{NodeBeat, NodeName, SharedClock};
use crate::intake::polling::Poller;
use crate::pipeline::budget::Budget;
use crate::pipeline::memory::MemoryBudget;
use crate::runtime::{Wakeups, WorkerId};
use crate::store::{Change, Heartbeat, Role, Store};
use crate::telegram::TelegramError;

/// The bot-wide roles this process holds right now, for its heartbeat. A change is recorded at
/// once, not at the next beat: with a long `dead_after` that could be minutes of `docket nodes`
/// naming no holder.
#[derive(Debug, Clone, Default)]
pub(super) struct HeldRoles {
    roles: Arc<Mutex<BTreeSet<&'static str>>>,
    changed: Arc<Notify>,
}

impl HeldRoles {
    pub(super) fn set(&self, role: Role, held: bool) {
        let mut roles = self.roles.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = if held { roles.insert(role.as_str()) } else { roles.remove(role.as_str()) };
        if changed {
            // A stored permit: a change made while the heartbeat is writing is not lost.
            self.changed.notify_one();
        }
    }

    fn names(&self) -> Vec<String> {
        self.roles.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|r| (*r).to_owned()).collect()
    }
}

/// This host on the database: the name it registers under, and the figures its heartbeat
/// carries.
#[derive(Debug, Clone)]
pub(super) struct ThisNode {
    pub(super) name: NodeName,
    process: String,
    roles: HeldRoles,
    budget: Arc<Budget>,
    memory: Arc<MemoryBudget>,
}

impl ThisNode {
    /// The name this process runs under for `config`: `[node] name`, else the machine's host
    /// name.
    pub(super) fn name_of(config: &Config) -> NodeName {
        config.node.name.clone().unwrap_or_else(host_node_name)
    }

    /// This process as the node `name`.
    pub(super) fn new(name: NodeName, roles: HeldRoles, budget: Arc<Budget>, memory: Arc<MemoryBudget>) -> Self {
        Self { name, process: WorkerId::process_prefix(), roles, budget, memory }
    }

    fn beat(&self) -> NodeBeat {
        NodeBeat {
            name: self.name.clone(),
            process: self.process.clone(),
            roles: self.roles.names(),
            bytes: (self.budget.in_use(), self.budget.capacity()),
            memory: (self.memory.in_use(), self.memory.capacity()),
        }
    }

    /// Registers this node, refusing to start beside a live process under the same name. A
    /// process of this machine that is gone (this host restarting after a crash) gives its name
    /// back at once, without waiting for `dead_after`. `Ok(false)`: the database could not be
    /// asked right now (busy, say); the heartbeat registers later.
    pub(super) async fn register(
        &self,
        store: &Store,
        dead_after: Duration,
        clock: &SharedClock,
    ) -> anyhow::Result<bool> {
        let now = clock.now();
        let mut holder = match store.register_node(&self.beat(), dead_after, now).await {
            Ok(holder) => holder,
            Err(e) => {
                warn!(node = %self.name, error = %e, "cannot register this node now; its heartbeat will");
                return Ok(false);
            }
        };
        if holder.as_ref().is_some_and(|h| gone_from_this_machine(&h.beat.process)) {
            info!(node = %self.name, "the process that held this node's name on this machine is gone: taking it back");
            holder = store
                .register_node(&self.beat(), Duration::ZERO, now.plus(Duration::from_millis(1)))
                .await
                .context("while registering this node")?;
        }
        if let Some(holder) = holder {
            anyhow::bail!(
                "the node name {} is taken by {} (last heartbeat {} s ago): give this host its own \
                 [node] name, or stop that process (a dead one's name is free after [node] dead_after, {} s)",
                self.name,
                holder.beat.process.trim_end_matches(':'),
                holder.last_seen.until(now).as_secs(),
                dead_after.as_secs()
            );
        }
        info!(node = %self.name, "registered this node");
        Ok(true)
    }

    /// Records a heartbeat every quarter of `dead_after`, and at once when this process takes or
    /// loses a role, until `stop`; then records the clean stop. Cancels `drain` when `docket
    /// drain` asks this node to stop.
    pub(super) async fn beat_until(
        self,
        store: Store,
        mut registered: bool,
        dead_after: Duration,
        clock: SharedClock,
        drain: CancellationToken,
        stop: CancellationToken,
    ) {
        let every = dead_after / 4;
        let roles_changed = Arc::clone(&self.roles.changed);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(every) => {}
                () = roles_changed.notified() => {}
            }
            if !registered {
                match self.register(&store, dead_after, &clock).await {
                    Ok(done) => registered = done,
                    // Another live process took the name meanwhile: say so at every beat.
                    Err(e) => error!(node = %self.name, "{e:#}"),
                }
                continue;
            }
            match store.node_heartbeat(&self.beat(), clock.now()).await {
                Ok(Heartbeat::Recorded) => {}
                Ok(Heartbeat::DrainRequested) => {
                    if !drain.is_cancelled() {
                        info!(node = %self.name, "docket drain asked this node to stop");
                        drain.cancel();
                    }
                }
                Ok(Heartbeat::NotMine) => {
                    warn!(node = %self.name, "another process took this node's name after a silence")
                }
                Err(e) => warn!(node = %self.name, error = %e, "cannot record this node's heartbeat"),
            }
        }
        if let Err(e) = store.stop_node(&self.name, &self.process, clock.now()).await {
            warn!(node = %self.name, error = %e, "cannot record this node's stop; it will count as dead");
        }
    }
}

/// Whether `process` (`<host>:<pid>:`) names a process of this machine that no longer runs.
fn gone_from_this_machine(process: &str) -> bool {
    let mine = WorkerId::process_prefix();
    let host_of = |p: &str| p.split(':').next().map(str::to_owned);
    if host_of(process) != host_of(&mine) {
        return false;
    }
    let Some(pid) = process.split(':').nth(1).and_then(|p| p.parse::<i32>().ok()) else { return false };
    !process_runs(pid)
}

/// Whether process `pid` of this machine runs (signal 0; a process of another user counts).
#[cfg(target_os = "linux")]
fn process_runs(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(pid) => !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH)),
        None => false,
    }
}

#[cfg(not(target_os = "linux"))]
fn process_runs(_pid: i32) -> bool {
    true
}

/// The machine's host name as a node name: characters a name may not hold become `-`.
fn host_node_name() -> NodeName {
    let host = WorkerId::process_prefix();
    let host = host.split(':').next().unwrap_or_default();
    let clean: String = host
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .take(64)
        .collect();
    NodeName::new(&clean).unwrap_or_else(|| NodeName::new("host").expect("a valid name"))
}

/// How often a process that is not the poller tries to become it.
const POLLER_ROLE_RETRY: Duration = Duration::from_secs(1);

/// Polls getUpdates only while this process holds [`Role::Poller`], so one process of all those
/// on a database calls getUpdates at a time; the others stand by and take over within about a
/// second once the holder stops or dies (its database session ends, and the lock with it). The
/// new poller continues from the stored offset. A holder whose session ends stops polling.
pub(super) async fn poll_while_sole_poller(
    store: Store,
    poller: Poller,
    roles: HeldRoles,
    stop: CancellationToken,
) -> Result<(), TelegramError> {
    let bot = poller.bot_id();
    let beat = poller.heartbeat();
    loop {
        let mut role = loop {
            match store.try_take_role(Role::Poller, bot).await {
                Ok(Some(role)) => break role,
                Ok(None) => {}
                Err(e) => warn!(error = %e, "cannot ask the database who polls; asking again"),
            }
            // Standing by is healthy: /healthz watches this heartbeat.
            beat.beat();
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = tokio::time::sleep(POLLER_ROLE_RETRY) => {}
            }
        };
        info!("this process is the one that polls getUpdates");
        roles.set(Role::Poller, true);
        let term = stop.child_token();
        let polling = poller.clone().run(term.clone());
        tokio::pin!(polling);
        let ended = tokio::select! {
            result = &mut polling => Some(result),
            () = role.lost() => {
                warn!("lost the poller role (its database session ended): stopping polling; another process may poll now");
                term.cancel();
                Some(polling.await).filter(Result::is_err)
            }
        };
        roles.set(Role::Poller, false);
        if let Some(result) = ended {
            return result;
        }
    }
}

/// Wakes this process's workers and senders when any process on the database commits a change
/// that may make work claimable (PostgreSQL's LISTEN/NOTIFY; SQLite has one process, which wakes
/// its own). Without the feed, or while it is down, workers still find work at their next poll.
pub(super) async fn relay_changes(store: Store, wake: Wakeups, stop: CancellationToken) {
    let wake_all = || {
        wake.downloads.notify_waiters();
        wake.processing.notify_waiters();
        wake.outbox.notify_waiters();
    };
    let mut failures = 0;
    let mut feed = None;
    while !stop.is_cancelled() {
        let step = async {
            let feed = match &mut feed {
                Some(feed) => feed,
                None => match store.changes().await? {
                    Some(connected) => feed.insert(connected),
                    None => return Ok(None),
                },
            };
            feed.next().await.map(Some)
        };
        let change = tokio::select! {
            () = stop.cancelled() => return,
            change = step => change,
        };
        match change {
            Ok(None) => return,
            Ok(Some(Change::Jobs)) => {
                failures = 0;
                wake.downloads.notify_waiters();
                wake.processing.notify_waiters();
            }
            Ok(Some(Change::Outbox)) => {
                failures = 0;
                wake.outbox.notify_waiters();
            }
            Ok(Some(Change::Missed)) => {
                warn!("lost the connection that listens for changes; listening again");
                wake_all();
            }
            Err(e) => {
                failures += 1;
                feed = None;
                let wait = backoff_jittered(failures, Duration::from_millis(200), Duration::from_secs(10));
                warn!(error = %e, wait_ms = wait.as_millis() as u64, "cannot listen for changes; trying again");
                wake_all();
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}
