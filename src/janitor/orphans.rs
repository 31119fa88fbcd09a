//! The third step of a janitor pass: the files in `downloads/`, `work/` and `results/` that no
//! live job owns, found and deleted. Files are listed first, then judged against the jobs as they are now, and
//! judged again right before they go.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tracing::warn;

use super::{Cause, JanitorDeps, JanitorError, Removal, Report};
use crate::domain::{FileOwner, JobState, Ticket, Timestamp};
use crate::spool::Spool;

/// Deletes (or, with `dry_run`, lists in `report`) the files no live job owns at `now`; those of
/// the jobs in `gone` go with the cause this pass gave them.
///
/// One sequence, kept whole because its order is the safety rule: list, judge against the owners,
/// judge the candidates again against the owners as they are right before deleting, then delete
/// files before their folders.
pub(super) async fn sweep(
    deps: &JanitorDeps,
    gone: &HashMap<Ticket, Cause>,
    now: Timestamp,
    dry_run: bool,
    report: &mut Report,
) -> Result<(), JanitorError> {
    let spool = deps.spool.clone();
    let listing = tokio::task::spawn_blocking(move || list_files(&spool))
        .await
        .map_err(|source| JanitorError::Panicked { what: "listing the data folder", source })?;
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
        return Ok(());
    }
    // Folders to try afterwards: those of deleted files, and job folders already empty (left by
    // a crash between deleting a file and its folder). Only folders of jobs that ended: a job
    // that can still be claimed keeps its folder, so a worker that claims it while this pass
    // runs never finds the folder it just made gone.
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
    let spool = deps.spool.clone();
    report.removed = tokio::task::spawn_blocking(move || remove_all(&spool, doomed, folders))
        .await
        .map_err(|source| JanitorError::Panicked { what: "deleting files", source })?;
    Ok(())
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
        // A result's preview lies beside it and is the job's as long as the result is.
        Area::Results => {
            job.state == JobState::Ready
                && (recorded(&job.result_path)
                    || job
                        .result_path
                        .as_deref()
                        .is_some_and(|result| crate::spool::preview_path_for(Path::new(result)) == file.path))
        }
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
fn remove_all(spool: &Spool, doomed: Vec<Removal>, mut folders: Vec<PathBuf>) -> Vec<Removal> {
    let chunk = doomed.len().div_ceil(DELETERS).max(1);
    let removed: Vec<Removal> = std::thread::scope(|scope| {
        let workers: Vec<_> = doomed
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .filter(|r| match spool.remove_path(&r.path) {
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
                    spool.remove_empty_folder(folder);
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
    fn a_ready_results_preview_is_kept_with_it_and_any_other_preview_is_not() {
        let preview = found("/d/results/7/3-r.pdf.preview.jpg", Area::Results, Duration::ZERO);
        assert_eq!(verdict(&preview, Some(&owner(JobState::Ready, None)), None), Verdict::Keep);
        assert_eq!(verdict(&preview, Some(&owner(JobState::Accepted, None)), None), Verdict::Delete(Cause::Orphan));
        let earlier = found("/d/results/7/2-q.pdf.preview.jpg", Area::Results, Duration::ZERO);
        assert_eq!(
            verdict(&earlier, Some(&owner(JobState::Ready, None)), None),
            Verdict::Delete(Cause::Orphan),
            "the preview of a result the job no longer records"
        );
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
