//! The reaper: deletes the files of jobs that ended outside the pipeline's own hands (a person's
//! `/cancel` or `/forget`, `docket cancel`), and gives back their byte reservations.
//!
//! Such a job may have files on this machine that no worker holds any more: a `fetched` source
//! waiting for a processing slot, a result kept for retention. Intake only changes rows (it does
//! no disk work), then wakes the reaper of its own process; a cancel made by another process is
//! seen within [`REAP_EVERY`]. A worker that held the job loses its lease at its next renewal and
//! reaps the job itself ([`reap`]).

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::PipelineDeps;
use crate::domain::Ticket;

/// How often the reaper looks for ended jobs without being woken (jobs ended by another process).
pub const REAP_EVERY: Duration = Duration::from_secs(30);

/// How far back each look reaches beyond the previous one's start: clocks of processes on one
/// database differ a little, and a row's `updated_at` is its writer's time.
const OVERLAP: Duration = Duration::from_secs(60);

/// Reaps jobs as they end, until `stop`.
pub async fn run_reaper(deps: PipelineDeps, stop: CancellationToken) {
    let mut since = deps.clock.now().minus(OVERLAP);
    loop {
        let woken = deps.wake.ended.notified();
        tokio::pin!(woken);
        // Registered before the look, so an end committed during it wakes the next one.
        woken.as_mut().enable();
        let started = deps.clock.now();
        match deps.store.ended_since(since).await {
            Ok(tickets) => {
                for ticket in tickets {
                    reap(&deps, ticket);
                }
                since = started.minus(OVERLAP);
            }
            Err(e) => warn!(error = %e, "cannot list the jobs that ended; looking again later"),
        }
        tokio::select! {
            () = &mut woken => {}
            () = tokio::time::sleep(REAP_EVERY) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Deletes every file of the ended job `ticket` on this machine and gives back its reservation.
/// Only for a job whose row says it ended (`failed` or `expired`) and that no lease holds.
pub fn reap(deps: &PipelineDeps, ticket: Ticket) {
    match deps.spool.remove_everything_of(ticket) {
        Ok(0) => {}
        Ok(removed) => info!(ticket = ticket.0, downloads = removed, "deleted the files of an ended job"),
        Err(e) => warn!(ticket = ticket.0, error = %e, "could not delete the files of an ended job; the janitor will"),
    }
    deps.budget.release(ticket);
}
