//! The byte budget: concurrency is bounded by bytes on disk, not by a count of jobs.
//!
//! A job reserves `size × multiplier` (its source plus the operation's intermediate output)
//! when its download is claimed, and keeps the reservation while it has files in `downloads/` or
//! `work/`; results kept for retention are not counted. A job without a declared size reserves
//! the download limit × multiplier until its real size is known (getFile's answer, then the bytes
//! received), and then only its real size × multiplier. Reservations live in this process: the
//! budget is per machine, and at startup the jobs whose files are still on disk reserve again
//! before anything new starts.
//!
//! Every way a job leaves the stages gives its reservation back, and the reservations are also
//! checked against durable state ([`Budget::reconcile`]): a reservation whose job holds no files
//! of this machine any more (ended, given back, moved on by another worker) is dropped, so no
//! path, present or future, can keep room reserved for long. A download's reservation carries the
//! lease token of its claim, so an attempt that lost its job can only give back its own claim,
//! never the reservation of the worker that holds the job now.
//!
//! Fairness: small jobs may pass a big one waiting for room, but once the head of the queue has
//! waited `max_wait` since it became due, nothing new is admitted until it fits, so it starts
//! within `max_wait` plus the time the jobs in flight take to finish. A job that can never fit
//! (the budget was lowered after it was accepted) is failed with a reason instead of holding
//! everyone back.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::domain::{Job, Ticket, Timestamp};
use crate::store::ClaimLimits;

/// One job's place in the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reservation {
    /// The lease token of the download claim that reserved it.
    token: i64,
    /// Bytes reserved.
    bytes: u64,
}

/// `[budget]`'s figures.
#[derive(Debug, Clone, Copy)]
struct Sizing {
    capacity: u64,
    multiplier: f64,
    max_wait: Duration,
}

/// The reservations of this process.
#[derive(Debug)]
pub struct Budget {
    /// `[budget]`'s figures; a reload may change them ([`Budget::set_sizing`]).
    sizing: Mutex<Sizing>,
    held: Mutex<HashMap<Ticket, Reservation>>,
    /// Claim and reserve happen under this lock, so two workers cannot both take the last room,
    /// and a reconciliation never misses a claim made while it reads the store.
    pub(crate) claim_lock: tokio::sync::Mutex<()>,
    /// Woken when room is freed.
    freed: Arc<Notify>,
}

/// The largest source a budget of `capacity` bytes can ever hold when each byte of source needs
/// `multiplier` bytes of room.
pub fn largest_source_of(capacity: u64, multiplier: f64) -> u64 {
    (capacity as f64 / multiplier.max(1.0)).floor() as u64
}

/// The largest source some live host can hold: `own_largest` (this host's), or more where the
/// largest byte budget of a live host (`largest_live_budget`, by the heartbeats in the `nodes`
/// table) holds more at `multiplier`. Intake refuses a file above it; the download pool fails a
/// waiting one that grew above it.
pub fn largest_source_anywhere(own_largest: u64, largest_live_budget: Option<u64>, multiplier: f64) -> u64 {
    own_largest.max(largest_source_of(largest_live_budget.unwrap_or(0), multiplier))
}

impl Budget {
    /// A budget of `capacity` bytes; `freed` is notified whenever room is released.
    pub fn new(capacity: u64, multiplier: f64, max_wait: Duration, freed: Arc<Notify>) -> Self {
        Self {
            sizing: Mutex::new(Sizing { capacity, multiplier, max_wait }),
            held: Mutex::new(HashMap::new()),
            claim_lock: tokio::sync::Mutex::new(()),
            freed,
        }
    }

    /// Takes new figures (a reload). Reservations already held stay as they are; what is claimed
    /// next fits the new capacity. Waiting downloads are woken, as the room may have grown.
    pub fn set_sizing(&self, capacity: u64, multiplier: f64, max_wait: Duration) {
        *self.sizing.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Sizing { capacity, multiplier, max_wait };
        self.freed.notify_waiters();
    }

    /// The budget's size in bytes.
    pub fn capacity(&self) -> u64 {
        self.sizing().capacity
    }

    fn sizing(&self) -> Sizing {
        *self.sizing.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Bytes a source of `size` bytes needs.
    pub fn need(&self, size: u64) -> u64 {
        (size as f64 * self.sizing().multiplier).ceil() as u64
    }

    /// The largest source that could ever fit.
    pub fn largest_source(&self) -> u64 {
        largest_source_of(self.sizing().capacity, self.sizing().multiplier)
    }

    /// The largest source some live host can hold, this one or the one with the largest
    /// `largest_live_budget` ([`largest_source_anywhere`] at this budget's multiplier).
    pub fn largest_source_anywhere(&self, largest_live_budget: Option<u64>) -> u64 {
        largest_source_anywhere(self.largest_source(), largest_live_budget, self.sizing().multiplier)
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> u64 {
        self.lock().values().map(|r| r.bytes).sum()
    }

    /// The tickets holding a reservation now.
    pub fn holders(&self) -> Vec<Ticket> {
        let mut tickets: Vec<Ticket> = self.lock().keys().copied().collect();
        tickets.sort();
        tickets
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Ticket, Reservation>> {
        // A panic while holding this plain map cannot leave it half-updated.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The claim limits that fit the room left, for a mode whose download limit is `limit`.
    pub fn limits(&self, download_limit: u64, per_chat: usize) -> ClaimLimits {
        let free = self.sizing().capacity.saturating_sub(self.in_use());
        let fits = (free as f64 / self.sizing().multiplier).floor() as u64;
        ClaimLimits {
            unknown_size: to_i64(self.unknown_size(download_limit)),
            max_size: to_i64(fits),
            per_chat: i64::try_from(per_chat).unwrap_or(i64::MAX),
        }
    }

    /// The size assumed for a file Telegram did not size: the download limit, capped so that it
    /// can fit the budget at all.
    pub fn unknown_size(&self, download_limit: u64) -> u64 {
        download_limit.min(self.largest_source())
    }

    /// The size `job` is assumed to need room for before its real size is known.
    pub fn assumed_size(&self, job: &Job, download_limit: u64) -> u64 {
        job.submission
            .declared_size
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or_else(|| self.unknown_size(download_limit))
    }

    /// Whether `job` needs more room than the whole budget has: it can never start.
    pub fn can_never_fit(&self, job: &Job) -> bool {
        job.submission
            .declared_size
            .and_then(|s| u64::try_from(s).ok())
            .is_some_and(|size| self.need(size) > self.sizing().capacity)
    }

    /// Whether `head` (the next waiting download) needs more room than is free now.
    pub fn lacks_room_for(&self, head: &Job, download_limit: u64) -> bool {
        self.need(self.assumed_size(head, download_limit)) > self.sizing().capacity.saturating_sub(self.in_use())
    }

    /// Whether `head` (the next waiting download) has waited so long since it became due that
    /// nothing may pass it.
    pub fn must_wait_for(&self, head: &Job, now: Timestamp, download_limit: u64) -> bool {
        self.lacks_room_for(head, download_limit) && head.not_before.until(now) >= self.sizing().max_wait
    }

    /// Reserves room for `ticket`'s source of `size` bytes, for the download claim with lease
    /// `token` (any value for a job re-reserved at startup).
    pub fn hold(&self, ticket: Ticket, token: i64, size: u64) {
        let bytes = self.need(size);
        let previous = self.update(|held| held.insert(ticket, Reservation { token, bytes }));
        if previous.is_some_and(|p| p.bytes > bytes) {
            self.freed.notify_waiters();
        }
    }

    /// Corrects `ticket`'s reservation once the real size of its source is known. Does nothing
    /// when the job holds no reservation (it was given back meanwhile).
    pub fn resize(&self, ticket: Ticket, size: u64) {
        let bytes = self.need(size);
        let shrunk = self.update(|held| {
            let reservation = held.get_mut(&ticket)?;
            let before = reservation.bytes;
            reservation.bytes = bytes;
            Some(before > bytes)
        });
        if shrunk == Some(true) {
            self.freed.notify_waiters();
        }
    }

    /// Gives back `ticket`'s reservation: its files are gone (ready, failed, source lost).
    pub fn release(&self, ticket: Ticket) {
        if self.update(|held| held.remove(&ticket)).is_some() {
            self.freed.notify_waiters();
        }
    }

    /// Gives back the reservation the download claim with lease `token` made, if it is still
    /// that claim's: an attempt that ended without a source (a retry, a lost lease, a shutdown).
    pub fn release_claim(&self, ticket: Ticket, token: i64) {
        let removed = self.update(|held| match held.get(&ticket) {
            Some(r) if r.token == token => held.remove(&ticket),
            _ => None,
        });
        if removed.is_some() {
            self.freed.notify_waiters();
        }
    }

    /// Drops every reservation whose job is not in `holding` (the jobs that, by the store, may
    /// hold files of this machine). Call it under the budget's claim lock, with `holding` read
    /// under that lock, so no claim made meanwhile is missed. Returns the tickets released.
    pub fn reconcile(&self, holding: &HashSet<Ticket>) -> Vec<Ticket> {
        let mut released = self.update(|held| {
            let stale: Vec<Ticket> = held.keys().filter(|t| !holding.contains(t)).copied().collect();
            for ticket in &stale {
                held.remove(ticket);
            }
            stale
        });
        if !released.is_empty() {
            released.sort();
            self.freed.notify_waiters();
        }
        released
    }

    /// Applies `change` to the reservations and publishes the total.
    fn update<T>(&self, change: impl FnOnce(&mut HashMap<Ticket, Reservation>) -> T) -> T {
        let mut held = self.lock();
        let out = change(&mut held);
        metrics::gauge!("docket_budget_reserved_bytes").set(held.values().map(|r| r.bytes).sum::<u64>() as f64);
        out
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(capacity: u64) -> Budget {
        Budget::new(capacity, 2.0, Duration::from_secs(10), Arc::new(Notify::new()))
    }

    #[test]
    fn limits_shrink_as_room_is_reserved_and_grow_when_released() {
        let b = budget(100);
        assert_eq!(b.limits(1_000, 2).max_size, 50);
        b.hold(Ticket(1), 7, 30);
        assert_eq!(b.in_use(), 60);
        assert_eq!(b.limits(1_000, 2).max_size, 20);
        b.resize(Ticket(1), 10); // corrected once the real size is known
        assert_eq!(b.limits(1_000, 2).max_size, 40);
        b.release(Ticket(1));
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn unknown_sizes_assume_the_limit_but_never_more_than_can_fit() {
        let b = budget(100);
        assert_eq!(b.unknown_size(20), 20);
        assert_eq!(b.unknown_size(1_000), 50);
    }

    #[test]
    fn a_claim_gives_back_only_its_own_reservation() {
        let b = budget(100);
        b.hold(Ticket(1), 7, 10);
        // An attempt whose lease was lost (token 6) must not free the current claim's room.
        b.release_claim(Ticket(1), 6);
        assert_eq!(b.in_use(), 20);
        b.release_claim(Ticket(1), 7);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn resizing_a_released_job_reserves_nothing() {
        let b = budget(100);
        b.resize(Ticket(3), 10);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn reconciling_drops_the_reservations_of_jobs_that_hold_no_files() {
        let b = budget(100);
        b.hold(Ticket(1), 1, 10);
        b.hold(Ticket(2), 1, 10);
        b.hold(Ticket(3), 1, 10);
        let holding: HashSet<Ticket> = [Ticket(2)].into_iter().collect();
        assert_eq!(b.reconcile(&holding), vec![Ticket(1), Ticket(3)]);
        assert_eq!(b.holders(), vec![Ticket(2)]);
        assert_eq!(b.in_use(), 20);
    }
}
