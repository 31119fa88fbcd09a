//! Which download is claimed next: the head of the queue, when free space, the byte budget and
//! `max_wait` let it start, with its bytes reserved under the same lock.

use tracing::warn;

use super::PipelineDeps;
use super::progress::report_queue;
use super::record::fail;
use crate::domain::{FailureReason, Job, Timestamp};
use crate::runtime::WorkerId;

/// Claims the next download that fits the byte budget and the per-chat bound, and reserves its
/// bytes, under one lock so two workers cannot both take the last room.
pub(super) async fn claim_download(deps: &PipelineDeps, owner: &str) -> crate::store::StoreResult<Option<Job>> {
    let _claiming = deps.budget.claim_lock.lock().await;
    let now = deps.clock.now();
    let limit = deps.settings.get().download_limit;
    // Whether the head of the queue is this host's to wait for: one too big for this host's
    // budget that another live host's holds is left to that host.
    let (head, ours) = loop {
        let Some(head) = deps.store.next_waiting_download(now).await? else { return Ok(None) };
        if !deps.budget.can_never_fit(&head) {
            break (head, true);
        }
        let size = deps.budget.assumed_size(&head, limit);
        let anywhere = largest_source_anywhere(deps, now).await?;
        if size <= anywhere {
            break (head, false);
        }
        // The budgets were lowered after the job was accepted: it would hold every other
        // download back (through `max_wait`) forever.
        let reason = FailureReason::TooBig { size, limit: anywhere };
        let detail = format!("needs {} bytes, more than the whole budget of every live host", deps.budget.need(size));
        if !fail(deps, &head, None, reason, detail).await {
            // Someone else moved it; do not spin on it.
            return Ok(None);
        }
    };
    if let Ok(free) = fs4::available_space(deps.spool.downloads())
        && free < deps.settings.get().min_free
    {
        // A full disk is not the job's fault: it waits in `accepted` until space returns. (The
        // janitor warns once per pass; this path runs on every idle poll.)
        tracing::debug!(
            free_bytes = free,
            min_free_bytes = deps.settings.get().min_free,
            "too little free space; not starting downloads"
        );
        return Ok(None);
    }
    if ours && deps.budget.lacks_room_for(&head, limit) {
        // Before anyone waits for room, make sure the room is really taken: drop reservations
        // whose jobs hold no files any more, whatever path forgot them.
        reconcile_budget(deps, now).await?;
    }
    if ours && deps.budget.must_wait_for(&head, now, limit) {
        // The head of the queue waited long enough: let the room it needs free up.
        tracing::debug!(ticket = %head.ticket, "holding new downloads back for a job waiting for room");
        return Ok(None);
    }
    let limits = deps.budget.limits(limit, deps.settings.get().per_chat);
    let job = deps.store.claim_download(owner, now, deps.settings.get().lease, &limits).await?;
    if let Some(job) = &job
        && let Some(lease) = &job.lease
    {
        deps.budget.hold(job.ticket, lease.token, deps.budget.assumed_size(job, limit));
        // Everyone behind it moved up one place.
        tokio::spawn(report_queue(deps.clone(), now));
    }
    Ok(job)
}

/// The largest source a host alive at `now` can hold: this host's largest, or more where another
/// live host's byte budget is larger (by the heartbeats in the `nodes` table).
async fn largest_source_anywhere(deps: &PipelineDeps, now: Timestamp) -> crate::store::StoreResult<u64> {
    let largest = deps.store.largest_live_bytes_budget(now.minus(deps.settings.get().dead_after)).await?;
    Ok(deps.budget.largest_source_anywhere(largest))
}

/// Drops the reservations of jobs that, by the store, hold no files of this machine. The caller
/// holds the budget's claim lock.
async fn reconcile_budget(deps: &PipelineDeps, now: Timestamp) -> crate::store::StoreResult<()> {
    let holding: std::collections::HashSet<_> =
        deps.store.jobs_holding_files(&WorkerId::process_prefix(), now).await?.into_iter().collect();
    let released = deps.budget.reconcile(&holding);
    if !released.is_empty() {
        warn!(
            tickets = ?released.iter().map(|t| t.0).collect::<Vec<_>>(),
            "released byte-budget reservations of jobs that hold no files any more"
        );
    }
    Ok(())
}
