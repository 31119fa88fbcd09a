//! The byte budget: concurrency is bounded by bytes on disk, not by a count of jobs.
//!
//! A job reserves `size × multiplier` (its source plus the operation's intermediate output)
//! before its download starts, and keeps the reservation while it has files in `downloads/` or
//! `work/`; results kept for retention are not counted. A job without a declared size reserves
//! the download limit × multiplier until its real size is known. Reservations live in this
//! process: the budget is per machine, and at startup the jobs whose files are still on disk
//! reserve again before anything new starts.
//!
//! Fairness: small jobs may pass a big one waiting for room, but once the head of the queue has
//! waited `max_wait`, nothing new is admitted until it fits, so it starts within `max_wait` plus
//! the time the jobs in flight take to finish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::domain::{Ticket, Timestamp};
use crate::store::{ClaimLimits, Job};

/// The reservations of this process.
#[derive(Debug)]
pub struct Budget {
    capacity: u64,
    multiplier: f64,
    max_wait: Duration,
    held: Mutex<HashMap<Ticket, u64>>,
    /// Claim and reserve happen under this lock, so two workers cannot both take the last room.
    pub(crate) claim_lock: tokio::sync::Mutex<()>,
    /// Woken when room is freed.
    freed: Arc<Notify>,
}

impl Budget {
    /// A budget of `capacity` bytes; `freed` is notified whenever room is released.
    pub fn new(capacity: u64, multiplier: f64, max_wait: Duration, freed: Arc<Notify>) -> Self {
        Self {
            capacity,
            multiplier,
            max_wait,
            held: Mutex::new(HashMap::new()),
            claim_lock: tokio::sync::Mutex::new(()),
            freed,
        }
    }

    /// Bytes a source of `size` bytes needs.
    pub fn need(&self, size: u64) -> u64 {
        (size as f64 * self.multiplier).ceil() as u64
    }

    /// The largest source that could ever fit.
    pub fn largest_source(&self) -> u64 {
        (self.capacity as f64 / self.multiplier).floor() as u64
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> u64 {
        self.lock().values().sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Ticket, u64>> {
        // A panic while holding this plain map cannot leave it half-updated.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The claim limits that fit the room left, for a mode whose download limit is `limit`.
    pub fn limits(&self, download_limit: u64, per_chat: usize) -> ClaimLimits {
        let free = self.capacity.saturating_sub(self.in_use());
        let fits = (free as f64 / self.multiplier).floor() as u64;
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

    /// Whether `head` (the oldest waiting download) has waited so long that nothing may pass it.
    pub fn must_wait_for(&self, head: &Job, now: Timestamp, download_limit: u64) -> bool {
        let size =
            head.declared_size.and_then(|s| u64::try_from(s).ok()).unwrap_or_else(|| self.unknown_size(download_limit));
        let free = self.capacity.saturating_sub(self.in_use());
        let waiting_since = head.created_at.max(head.not_before);
        self.need(size) > free && waiting_since.until(now) >= self.max_wait
    }

    /// Reserves (or corrects the reservation of) `ticket` for a source of `size` bytes.
    pub fn hold(&self, ticket: Ticket, size: u64) {
        let need = self.need(size);
        let previous = {
            let mut held = self.lock();
            let previous = held.insert(ticket, need);
            metrics::gauge!("docket_budget_reserved_bytes").set(held.values().sum::<u64>() as f64);
            previous
        };
        if previous.is_some_and(|p| p > need) {
            self.freed.notify_waiters();
        }
    }

    /// Releases `ticket`'s reservation (its files are gone).
    pub fn release(&self, ticket: Ticket) {
        let removed = {
            let mut held = self.lock();
            let removed = held.remove(&ticket);
            metrics::gauge!("docket_budget_reserved_bytes").set(held.values().sum::<u64>() as f64);
            removed
        };
        if removed.is_some() {
            self.freed.notify_waiters();
        }
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
        b.hold(Ticket(1), 30);
        assert_eq!(b.in_use(), 60);
        assert_eq!(b.limits(1_000, 2).max_size, 20);
        b.hold(Ticket(1), 10); // corrected once the real size is known
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
}
