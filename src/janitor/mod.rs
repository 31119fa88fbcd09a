//! The janitor: every file has an owner, a deadline and a way to be found when the owner is gone.
//!
//! Each pass, in this order:
//! 1. **Expiry**: `ready` jobs past `result_expires_at` become `expired` (the row stays; the state
//!    is committed first, then the file is deleted).
//! 2. **Results cap**: while kept results exceed `[retention] results_bytes`, the oldest expire
//!    early and their owners are told, in the same transaction.
//! 3. **Orphans**: files in `downloads/`, `work/` and `results/` that no live job owns — left by a
//!    crash between a commit and a deletion, or by a dead attempt — are deleted. A `.part` that no
//!    current lease owns goes once older than `part_max_age`. Nothing of a job under a live lease
//!    is ever deleted, whatever its age. Files are listed *before* the jobs are read, so a file a
//!    worker creates during the pass is never mistaken for an orphan.
//! 4. **History**: registered updates, delivered messages and (optionally) ended jobs older than
//!    `[retention] history` are pruned.
//! 5. **Disk**: free space under `data_dir`, for the report. Between passes, every few seconds,
//!    `janitor/disk.rs` watches it against `[storage] min_free`: a warning and a message to the
//!    admins once per episode below it.
//!
//! `docket janitor --dry-run` runs the same pass and deletes nothing. The files' part (3) is
//! `janitor/orphans.rs`; this file runs the pass and its other steps.
//!
//! Several hosts on one PostgreSQL database each have their own data folder: every host sweeps
//! its own files (3, 5), while the parts that change rows for the whole bot (1, 2, 4) run on one
//! host at a time, the holder of [`Role::Janitor`]. That holder also hands back the jobs of hosts
//! found lost ([`Store::hand_back_lost_nodes`]), every quarter of `[node] dead_after`. The files
//! of results that expired on another host's pass go when this host's reaper or next pass finds
//! them ended.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::domain::BotId;
use crate::domain::{IdempotencyKey, Job, NewMessage};
use crate::domain::{MessageKind, SharedClock, Ticket, Timestamp};
use crate::spool::Spool;
use crate::store::{History, Pruned, Role, RoleLock, Store, StoreError};
use crate::texts;

mod disk;
mod orphans;

pub use disk::DiskWatch;

/// Why a janitor pass stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum JanitorError {
    /// The store failed; the next pass tries again.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The thread that walked or deleted files panicked.
    #[error("{what} panicked: {source}")]
    Panicked {
        /// What the thread was doing.
        what: &'static str,
        /// The panic, as the runtime reported it.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// The janitor's settings.
#[derive(Debug, Clone)]
pub struct JanitorSettings {
    /// Time between passes inside `docket run`.
    pub interval: Duration,
    /// Age after which an unowned `.part` goes.
    pub part_max_age: Duration,
    /// Age after which old rows are pruned.
    pub history: Duration,
    /// Whether ended job rows are pruned too.
    pub prune_jobs: bool,
    /// Cap on kept results.
    pub results_bytes: Option<u64>,
    /// Free space below which to warn.
    pub min_free: u64,
    /// Who is told when the data folder runs low (`[access] admins`).
    pub admins: Vec<i64>,
    /// Silence after which a host counts as lost (`[node] dead_after`).
    pub dead_after: Duration,
}

/// What the janitor needs. Cheap to clone.
#[derive(Debug, Clone)]
pub struct JanitorDeps {
    /// The store.
    pub store: Store,
    /// Time.
    pub clock: SharedClock,
    /// The data folder.
    pub spool: Spool,
    /// Settings.
    pub settings: crate::runtime::Live<JanitorSettings>,
    /// Woken when owners are told of an early expiry.
    pub outbox: Arc<Notify>,
    /// This host's name (`[node] name`), in what it tells admins of its own disk.
    pub node: String,
    /// Whether this host's data folder is low on space, and since when.
    pub disk: Arc<DiskWatch>,
}

/// Why a file is (or would be) deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The result's retention ran out.
    Expired,
    /// Results exceeded `results_bytes`; the oldest went early.
    OverCap,
    /// No live job owns the file.
    Orphan,
    /// A `.part` no lease owns, older than `part_max_age`.
    StalePart,
}

impl Cause {
    /// A word for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::OverCap => "over the results cap",
            Self::Orphan => "orphan",
            Self::StalePart => "stale .part",
        }
    }
}

/// One file the pass deleted (or would delete).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Why.
    pub cause: Cause,
}

/// What a pass did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Jobs moved to `expired` (on schedule or early).
    pub expired_jobs: Vec<Ticket>,
    /// Files deleted.
    pub removed: Vec<Removal>,
    /// Files kept because a live lease owns them although they looked old or unowned.
    pub kept_leased: usize,
    /// Rows pruned.
    pub pruned: Pruned,
    /// Free bytes on the data folder's filesystem, when known.
    pub free_bytes: Option<u64>,
}

impl Report {
    /// Bytes deleted.
    pub fn removed_bytes(&self) -> u64 {
        self.removed.iter().map(|r| r.bytes).sum()
    }
}

/// Which parts of a pass run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    /// Everything: this host holds [`Role::Janitor`] (or is the only one).
    Everything,
    /// Only this host's own files and disk; another host does the rest.
    ThisHostOnly,
}

/// Runs a pass every `interval` until `cancel` fires: the whole pass while this process holds
/// [`Role::Janitor`] for `bot`, its own files only otherwise. The role is checked (or tried for)
/// every 5 s (`ROLE_CHECK`); its holder also hands back lost hosts' jobs, four times per
/// `dead_after`. `holds_role` hears whether this process holds
/// the role after every check (for the node's heartbeat).
pub async fn run(deps: JanitorDeps, bot: BotId, holds_role: impl Fn(bool) + Send, cancel: CancellationToken) {
    let mut role: Option<RoleLock> = None;
    let (mut last_pass, mut last_hand_back) = (Instant::now(), None::<Instant>);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(ROLE_CHECK.min(deps.settings.get().interval)) => {}
        }
        role = hold_role(&deps, role, bot).await;
        holds_role(role.is_some());
        disk::watch(&deps).await;
        let settings = deps.settings.get();
        if role.is_some() && last_hand_back.is_none_or(|at| at.elapsed() >= settings.dead_after / 4) {
            last_hand_back = Some(Instant::now());
            hand_back_lost_nodes(&deps).await;
        }
        if last_pass.elapsed() < settings.interval {
            continue;
        }
        last_pass = Instant::now();
        let parts = if role.is_some() { Parts::Everything } else { Parts::ThisHostOnly };
        // A pass in progress is dropped at shutdown: each statement commits on its own and
        // the next pass redoes what is left.
        tokio::select! {
            () = cancel.cancelled() => return,
            result = pass_parts(&deps, parts, false) => if let Err(e) = result {
                error!(error = %e, "janitor pass failed; will try again next interval");
            }
        }
    }
}

/// How often the janitor checks that it holds its role, or tries to take it: a holder that
/// died is replaced within this.
const ROLE_CHECK: Duration = Duration::from_secs(5);

/// The janitor role after checking it: kept while its database session lasts, taken when no
/// process holds it.
async fn hold_role(deps: &JanitorDeps, held: Option<RoleLock>, bot: BotId) -> Option<RoleLock> {
    if let Some(mut role) = held {
        if role.is_held().await {
            return Some(role);
        }
        warn!("lost the janitor role (its database session ended); another process may hold it now");
    }
    match deps.store.try_take_role(Role::Janitor, bot).await {
        Ok(Some(role)) => {
            info!("this process runs the bot-wide janitor (expiry, the results cap, history, lost hosts)");
            Some(role)
        }
        Ok(None) => None,
        Err(e) => {
            warn!(error = %e, "cannot ask the database who runs the janitor; asking again");
            None
        }
    }
}

/// Hands the jobs of lost hosts back to the queue, and says so.
async fn hand_back_lost_nodes(deps: &JanitorDeps) {
    let now = deps.clock.now();
    match deps.store.hand_back_lost_nodes(deps.settings.get().dead_after, now).await {
        Ok(handed) => {
            for (node, tickets) in handed {
                if tickets.is_empty() {
                    continue;
                }
                metrics::counter!("docket_jobs_handed_back_total").increment(tickets.len() as u64);
                warn!(
                    node = %node,
                    jobs = tickets.len(),
                    tickets = ?tickets.iter().map(|t| t.0).collect::<Vec<_>>(),
                    "a host was lost: its jobs go back to be downloaded again by any host"
                );
            }
        }
        Err(e) => warn!(error = %e, "cannot hand back the jobs of lost hosts; trying again"),
    }
}

/// One whole janitor pass. With `dry_run`, nothing is changed and the report lists what would be.
pub async fn pass(deps: &JanitorDeps, dry_run: bool) -> Result<Report, JanitorError> {
    pass_parts(deps, Parts::Everything, dry_run).await
}

/// One janitor pass of `parts`. With `dry_run`, nothing is changed and the report lists what
/// would be.
pub async fn pass_parts(deps: &JanitorDeps, parts: Parts, dry_run: bool) -> Result<Report, JanitorError> {
    let now = deps.clock.now();
    let mut report = Report { dry_run, ..Report::default() };
    // The jobs this pass expired, and why: their files go whatever the owners read later say.
    let mut gone: HashMap<Ticket, Cause> = HashMap::new();
    let bot_wide = parts == Parts::Everything;
    if bot_wide {
        let due = expire_due(deps, dry_run, now).await?;
        gone.extend(due.iter().map(|ticket| (*ticket, Cause::Expired)));
        let over_cap = apply_results_cap(deps, dry_run, now, &gone).await?;
        gone.extend(over_cap.iter().map(|ticket| (*ticket, Cause::OverCap)));
        report.expired_jobs.extend(due.into_iter().chain(over_cap));
    }
    orphans::sweep(deps, &gone, now, dry_run, &mut report).await?;
    if bot_wide {
        report.pruned = prune_history(deps, dry_run).await?;
    }
    check_disk(deps, &mut report);
    if !dry_run {
        record_metrics(&report);
    }
    info!(
        dry_run,
        expired_jobs = report.expired_jobs.len(),
        files_removed = report.removed.len(),
        bytes_removed = report.removed_bytes(),
        kept_leased = report.kept_leased,
        pruned_updates = report.pruned.updates,
        pruned_messages = report.pruned.messages,
        pruned_jobs = report.pruned.jobs,
        "janitor pass done"
    );
    Ok(report)
}

/// 1. Expiry on schedule, in one statement: a catch-up pass after downtime may find thousands.
///
/// Returns the jobs expired (that would be, in a dry run).
async fn expire_due(deps: &JanitorDeps, dry_run: bool, now: Timestamp) -> Result<Vec<Ticket>, StoreError> {
    if dry_run {
        Ok(deps.store.results_due(now).await?.into_iter().map(|j| j.ticket).collect())
    } else {
        deps.store.expire_due(now).await
    }
}

/// 2. The results cap: the oldest go first, and their owners hear of it.
///
/// `gone`: what this pass expired already. Returns the jobs expired (that would be, in a dry run).
async fn apply_results_cap(
    deps: &JanitorDeps,
    dry_run: bool,
    now: Timestamp,
    gone: &HashMap<Ticket, Cause>,
) -> Result<Vec<Ticket>, StoreError> {
    let Some(cap) = deps.settings.get().results_bytes else { return Ok(Vec::new()) };
    let results: Vec<Job> =
        deps.store.kept_results().await?.into_iter().filter(|j| !gone.contains_key(&j.ticket)).collect();
    let mut total: u64 = results.iter().map(result_bytes).sum();
    let mut expired = Vec::new();
    for job in &results {
        if total <= cap {
            break;
        }
        let lang = deps.store.chat_lang(job.submission.chat).await?;
        let notice = NewMessage::about_job(
            job,
            IdempotencyKey::early_expiry(job.ticket, job.submission.update_id),
            MessageKind::Reply,
            texts::expired_early(lang, job, now),
        );
        if dry_run || deps.store.expire_job(job.ticket, now, Some(&notice), now).await? {
            total = total.saturating_sub(result_bytes(job));
            expired.push(job.ticket);
        }
    }
    if !dry_run && !expired.is_empty() {
        deps.outbox.notify_waiters();
    }
    Ok(expired)
}

/// 4. History: rows older than `[retention] history` (counted only, in a dry run).
async fn prune_history(deps: &JanitorDeps, dry_run: bool) -> Result<Pruned, StoreError> {
    let settings = deps.settings.get();
    let history = History { older_than: deps.clock.now().minus(settings.history), ended_jobs: settings.prune_jobs };
    if dry_run { deps.store.count_prunable(&history).await } else { deps.store.prune(&history).await }
}

/// Step 5, the disk: free space under `data_dir`, for the report. The warning is the watch's
/// (`janitor/disk.rs`), once per episode.
fn check_disk(deps: &JanitorDeps, report: &mut Report) {
    report.free_bytes = fs4::available_space(deps.spool.root()).ok();
}

fn record_metrics(report: &Report) {
    metrics::counter!("docket_janitor_passes_total").increment(1);
    metrics::counter!("docket_janitor_results_expired_total").increment(report.expired_jobs.len() as u64);
    for removal in &report.removed {
        let cause = match removal.cause {
            Cause::Expired => "expired",
            Cause::OverCap => "over_cap",
            Cause::Orphan => "orphan",
            Cause::StalePart => "stale_part",
        };
        metrics::counter!("docket_janitor_files_removed_total", "cause" => cause).increment(1);
        metrics::counter!("docket_janitor_bytes_removed_total", "cause" => cause).increment(removal.bytes);
    }
    for (table, n) in
        [("updates", report.pruned.updates), ("outbox", report.pruned.messages), ("jobs", report.pruned.jobs)]
    {
        metrics::counter!("docket_janitor_rows_pruned_total", "table" => table).increment(n);
    }
}

fn result_bytes(job: &Job) -> u64 {
    job.result.as_ref().map_or(0, |r| u64::try_from(r.size).unwrap_or(0))
}
