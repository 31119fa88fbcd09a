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
//! 5. **Disk**: a warning when free space under `data_dir` falls below `[storage] min_free`.
//!
//! `docket janitor --dry-run` runs the same pass and deletes nothing.
//!
//! Several hosts on one PostgreSQL database each have their own data folder: every host sweeps
//! its own files (3, 5), while the parts that change rows for the whole bot (1, 2, 4) run on one
//! host at a time, the holder of [`Role::Janitor`]. That holder also hands back the jobs of hosts
//! found lost ([`Store::hand_back_lost_nodes`]), every quarter of `[node] dead_after`. The files
//! of results that expired on another host's pass go when this host's reaper or next pass finds
//! them ended.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::domain::BotId;
use crate::domain::{FileOwner, IdempotencyKey, Job, NewMessage};
use crate::domain::{JobState, MessageKind, SharedClock, Ticket, Timestamp};
use crate::spool::Spool;
use crate::store::{History, Pruned, Role, RoleLock, Store, StoreError};
use crate::texts::{self, Lang};

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
pub async fn pass(deps: &JanitorDeps, dry_run: bool) -> Result<Report, StoreError> {
    pass_parts(deps, Parts::Everything, dry_run).await
}

/// One janitor pass of `parts`. With `dry_run`, nothing is changed and the report lists what
/// would be.
pub async fn pass_parts(deps: &JanitorDeps, parts: Parts, dry_run: bool) -> Result<Report, StoreError> {
    let now = deps.clock.now();
    let mut report = Report { dry_run, ..Report::default() };
    let mut gone: HashMap<Ticket, Cause> = HashMap::new();
    let bot_wide = parts == Parts::Everything;

    // 1. Expiry on schedule, in one statement: a catch-up pass after downtime may find thousands.
    let due = if !bot_wide {
        Vec::new()
    } else if dry_run {
        deps.store.results_due(now).await?.into_iter().map(|j| j.ticket).collect()
    } else {
        deps.store.expire_due(now).await?
    };
    for ticket in due {
        gone.insert(ticket, Cause::Expired);
        report.expired_jobs.push(ticket);
    }

    // 2. The results cap: the oldest go first, and their owners hear of it.
    if let Some(cap) = deps.settings.get().results_bytes.filter(|_| bot_wide) {
        let results: Vec<Job> =
            deps.store.kept_results().await?.into_iter().filter(|j| !gone.contains_key(&j.ticket)).collect();
        let mut total: u64 = results.iter().map(result_bytes).sum();
        for job in &results {
            if total <= cap {
                break;
            }
            let lang = Lang::from_stored(deps.store.chat_language(job.submission.chat).await?.as_deref());
            let notice = NewMessage {
                idempotency_key: IdempotencyKey::early_expiry(job.ticket, job.submission.update_id),
                job: Some(job.ticket),
                chat: job.submission.chat,
                kind: MessageKind::Reply,
                body: texts::expired_early(lang, job, now),
                reply_to_message_id: Some(job.submission.message_id),
                buttons: Vec::new(),
            };
            if dry_run || deps.store.expire_job(job.ticket, now, Some(&notice), now).await? {
                total = total.saturating_sub(result_bytes(job));
                gone.insert(job.ticket, Cause::OverCap);
                report.expired_jobs.push(job.ticket);
            }
        }
        if !dry_run && report.expired_jobs.iter().any(|t| gone.get(t) == Some(&Cause::OverCap)) {
            deps.outbox.notify_waiters();
        }
    }

    // 3. Files: listed first, then judged against the jobs as they are now.
    let spool = deps.spool.clone();
    let listing = tokio::task::spawn_blocking(move || list_files(&spool))
        .await
        .map_err(|e| StoreError::Corrupt(format!("listing the data folder panicked: {e}")))?;
    let owners: HashMap<Ticket, FileOwner> =
        deps.store.file_owners().await?.into_iter().map(|j| (j.ticket, j)).collect();
    let now_sys = SystemTime::now();
    let part_max_age = deps.settings.get().part_max_age;
    let verdict = |file: &Found, owners: &HashMap<Ticket, FileOwner>, now: Timestamp| {
        let ticket = file.ticket.unwrap_or(Ticket(-1));
        judge(file, owners.get(&ticket), gone.get(&ticket).copied(), now, now_sys, part_max_age)
    };
    let mut candidates = Vec::new();
    for file in listing.files {
        match verdict(&file, &owners, now) {
            Verdict::Keep => {}
            Verdict::KeepLeased => report.kept_leased += 1,
            Verdict::Delete(_) => candidates.push(file),
        }
    }
    // A job may have been claimed (or have recorded a file) since the owners were read: judge
    // the candidates again against the jobs as they are now, right before deleting.
    let owners = if candidates.is_empty() || dry_run {
        owners
    } else {
        deps.store.file_owners().await?.into_iter().map(|j| (j.ticket, j)).collect()
    };
    let now = deps.clock.now();
    let mut doomed = Vec::new();
    for file in candidates {
        match verdict(&file, &owners, now) {
            Verdict::Keep => {}
            Verdict::KeepLeased => report.kept_leased += 1,
            Verdict::Delete(cause) => doomed.push(Removal { path: file.path, bytes: file.bytes, cause }),
        }
    }
    if dry_run {
        report.removed = doomed;
    } else {
        // Folders to try afterwards: those of deleted files, and job folders already empty
        // (left by a crash between deleting a file and its folder). Only folders of jobs that
        // ended: a job that can still be claimed keeps its folder, so a worker that claims it
        // while this pass runs never finds the folder it just made gone.
        let ended = |dir: &Path| {
            let ticket = dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()).map(Ticket);
            match ticket.and_then(|t| owners.get(&t)) {
                None => true,
                Some(owner) => owner.state == JobState::Ready && dir.starts_with(deps.spool.work_root()),
            }
        };
        let mut folders: Vec<PathBuf> = listing.empty_dirs.into_iter().map(|(dir, _)| dir).collect();
        folders.extend(doomed.iter().filter_map(|r| job_folder(&deps.spool, &r.path)));
        folders.retain(|dir| ended(dir));
        report.removed = tokio::task::spawn_blocking(move || remove_all(doomed, folders))
            .await
            .map_err(|e| StoreError::Corrupt(format!("deleting files panicked: {e}")))?;
    }

    // 4. History.
    let history =
        History { older_than: now.minus(deps.settings.get().history), ended_jobs: deps.settings.get().prune_jobs };
    report.pruned = match (bot_wide, dry_run) {
        (false, _) => Pruned::default(),
        (true, true) => deps.store.count_prunable(&history).await?,
        (true, false) => deps.store.prune(&history).await?,
    };

    // 5. Disk.
    report.free_bytes = fs4::available_space(deps.spool.root()).ok();
    if let Some(free) = report.free_bytes.filter(|f| *f < deps.settings.get().min_free) {
        warn!(
            free_bytes = free,
            min_free_bytes = deps.settings.get().min_free,
            "free space on the data folder is below [storage] min_free; downloads wait"
        );
    }
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
    if let Some(free) = report.free_bytes {
        metrics::gauge!("docket_data_free_bytes").set(free as f64);
    }
}

fn result_bytes(job: &Job) -> u64 {
    job.result.as_ref().map_or(0, |r| u64::try_from(r.size).unwrap_or(0))
}

/// A file found in the data folder.
#[derive(Debug)]
struct Found {
    path: PathBuf,
    bytes: u64,
    modified: SystemTime,
    area: Area,
    /// The ticket the file's name or folder belongs to; `None` for names docket never writes.
    ticket: Option<Ticket>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Area {
    Downloads,
    Work,
    Results,
}

/// What a walk of the data folder found.
struct Listing {
    files: Vec<Found>,
    /// Per-job folders under `work/` and `results/` with nothing in them, with their ticket.
    empty_dirs: Vec<(PathBuf, Option<Ticket>)>,
}

fn list_files(spool: &Spool) -> Listing {
    let mut out = Vec::new();
    let mut empty_dirs = Vec::new();
    for (area, root) in
        [(Area::Downloads, spool.downloads()), (Area::Work, spool.work_root()), (Area::Results, spool.results_root())]
    {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if area == Area::Downloads {
                let ticket = name.split('-').next().and_then(|t| t.parse().ok()).map(Ticket);
                push(&mut out, path, area, ticket);
            } else if path.is_dir() {
                let ticket = name.parse().ok().map(Ticket);
                let before = out.len();
                for inner in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                    push(&mut out, inner.path(), area, ticket);
                }
                if out.len() == before {
                    empty_dirs.push((path, ticket));
                }
            } else {
                push(&mut out, path, area, None);
            }
        }
    }
    Listing { files: out, empty_dirs }
}

fn push(out: &mut Vec<Found>, path: PathBuf, area: Area, ticket: Option<Ticket>) {
    // Probe files of `Spool::open` (".probe-…") are removed on their own.
    if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".probe-")) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return };
    out.push(Found {
        bytes: meta.len(),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        path,
        area,
        ticket,
    });
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Keep,
    KeepLeased,
    Delete(Cause),
}

fn holds_lease(owner: &FileOwner, now: Timestamp) -> bool {
    owner.lease.as_ref().is_some_and(|l| !l.is_expired(now))
}

fn judge(
    file: &Found,
    owner: Option<&FileOwner>,
    gone: Option<Cause>,
    now: Timestamp,
    now_sys: SystemTime,
    part_max_age: Duration,
) -> Verdict {
    let Some(job) = owner else {
        return match gone {
            Some(cause) => Verdict::Delete(cause),
            None => Verdict::Delete(Cause::Orphan),
        };
    };
    if let Some(cause) = gone {
        return Verdict::Delete(cause);
    }
    let leased = holds_lease(job, now);
    let path = file.path.to_string_lossy();
    let recorded = |p: &Option<String>| p.as_deref() == Some(path.as_ref());
    // Whichever host's job it is: hosts may share a data folder, and a file recorded for a job
    // of another host goes only once that job no longer records it.
    let owned = match file.area {
        Area::Downloads => recorded(&job.local_path),
        Area::Work => false,
        Area::Results => job.state == JobState::Ready && recorded(&job.result_path),
    };
    if owned {
        return Verdict::Keep;
    }
    if leased {
        // A worker holds the job right now: its files are in use, whatever they look like.
        return Verdict::KeepLeased;
    }
    let is_part = file.path.extension().is_some_and(|e| e == "part");
    if is_part {
        let age = now_sys.duration_since(file.modified).unwrap_or_default();
        return if age >= part_max_age { Verdict::Delete(Cause::StalePart) } else { Verdict::Keep };
    }
    Verdict::Delete(Cause::Orphan)
}

fn remove(path: &Path) -> std::io::Result<()> {
    let result = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The per-job folder (`work/<ticket>/` or `results/<ticket>/`) a file sits in, if any.
fn job_folder(spool: &Spool, file: &Path) -> Option<PathBuf> {
    let parent = file.parent()?;
    let root = parent.parent()?;
    (root == spool.work_root() || root == spool.results_root()).then(|| parent.to_path_buf())
}

/// How many threads delete at once. Each unlink costs about 100 µs of journal work on this
/// kind of disk; unlinks in different folders proceed in parallel (BENCHMARKS.md, janitor).
const DELETERS: usize = 4;

/// Deletes `doomed` from a few threads, then tries `folders` (which fails harmlessly for a
/// folder that still holds files). Returns what was deleted; failures are logged and skipped,
/// and the next pass tries them again.
fn remove_all(doomed: Vec<Removal>, mut folders: Vec<PathBuf>) -> Vec<Removal> {
    let chunk = doomed.len().div_ceil(DELETERS).max(1);
    let removed: Vec<Removal> = std::thread::scope(|scope| {
        let workers: Vec<_> = doomed
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .filter(|r| match remove(&r.path) {
                            Ok(()) => true,
                            Err(e) => {
                                warn!(error = %e, "janitor could not delete a file");
                                false
                            }
                        })
                        .cloned()
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    folders.sort();
    folders.dedup();
    let chunk = folders.len().div_ceil(DELETERS).max(1);
    std::thread::scope(|scope| {
        for part in folders.chunks(chunk) {
            scope.spawn(move || {
                for folder in part {
                    let _ = std::fs::remove_dir(folder);
                }
            });
        }
    });
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Lease;

    const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);
    const MAX_AGE: Duration = Duration::from_secs(3_600);

    fn found(path: &str, area: Area, age: Duration) -> Found {
        Found { path: PathBuf::from(path), bytes: 10, modified: SystemTime::now() - age, area, ticket: Some(Ticket(7)) }
    }

    fn owner(state: JobState, lease_until: Option<Timestamp>) -> FileOwner {
        FileOwner {
            ticket: Ticket(7),
            state,
            lease: lease_until.map(|until| Lease { owner: "h:1:download-0".into(), token: 3, until }),
            local_path: Some("/d/downloads/7-3-a.source".into()),
            result_path: Some("/d/results/7/3-r.pdf".into()),
        }
    }

    fn verdict(file: &Found, owner: Option<&FileOwner>, gone: Option<Cause>) -> Verdict {
        judge(file, owner, gone, NOW, SystemTime::now(), MAX_AGE)
    }

    #[test]
    fn a_recorded_source_or_result_is_kept() {
        let source = found("/d/downloads/7-3-a.source", Area::Downloads, Duration::ZERO);
        assert_eq!(verdict(&source, Some(&owner(JobState::Fetched, None)), None), Verdict::Keep);
        let result = found("/d/results/7/3-r.pdf", Area::Results, Duration::ZERO);
        assert_eq!(verdict(&result, Some(&owner(JobState::Ready, None)), None), Verdict::Keep);
        // The recorded result path of a job that is no longer ready is not a result.
        assert_eq!(verdict(&result, Some(&owner(JobState::Accepted, None)), None), Verdict::Delete(Cause::Orphan));
    }

    #[test]
    fn anything_of_a_job_under_a_live_lease_is_kept_whatever_its_age() {
        let live = owner(JobState::Processing, Some(NOW.plus(Duration::from_secs(30))));
        for (path, area) in [("/d/work/7/3-o.pdf", Area::Work), ("/d/downloads/7-3-b.part", Area::Downloads)] {
            let file = found(path, area, Duration::from_secs(86_400));
            assert_eq!(verdict(&file, Some(&live), None), Verdict::KeepLeased, "{path}");
        }
    }

    #[test]
    fn files_of_no_job_or_of_an_ended_one_go_with_their_cause() {
        let file = found("/d/results/7/3-r.pdf", Area::Results, Duration::ZERO);
        assert_eq!(verdict(&file, None, None), Verdict::Delete(Cause::Orphan));
        assert_eq!(verdict(&file, None, Some(Cause::Expired)), Verdict::Delete(Cause::Expired));
        // Expired in this pass: goes even though the owner read before still says ready.
        assert_eq!(
            verdict(&file, Some(&owner(JobState::Ready, None)), Some(Cause::OverCap)),
            Verdict::Delete(Cause::OverCap)
        );
    }

    #[test]
    fn an_unowned_part_goes_only_once_it_is_old() {
        let lapsed = owner(JobState::Accepted, Some(NOW.minus(Duration::from_secs(1))));
        let young = found("/d/downloads/7-2-c.part", Area::Downloads, Duration::from_secs(60));
        assert_eq!(verdict(&young, Some(&lapsed), None), Verdict::Keep, "may still be written by a slow holder");
        let old = found("/d/downloads/7-2-c.part", Area::Downloads, MAX_AGE);
        assert_eq!(verdict(&old, Some(&lapsed), None), Verdict::Delete(Cause::StalePart));
        let stray = found("/d/work/7/2-o.pdf", Area::Work, Duration::ZERO);
        assert_eq!(verdict(&stray, Some(&lapsed), None), Verdict::Delete(Cause::Orphan), "work of a dead attempt");
    }
}
