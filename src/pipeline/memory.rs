//! The memory budget: processing runs are bounded by the memory they may take together, not
//! by a count of cores.
//!
//! Before its child starts, a run reserves its address-space limit
//! ([`Limits::sized_for`](crate::operations::Limits::sized_for): its input's size × its
//! operation's measured factor, plus a base, at most the configured memory limit) and waits
//! until that fits in `[budget] memory`. The reservation is a guard: every way the run ends — a
//! result, a failure, a lost lease, shutdown, a panic — drops it and gives the memory back.
//! Since a child's address-space limit is the very number it reserved, and none starts without
//! its reservation, the children of this machine together stay within the budget whatever the
//! documents are. A run that needs more than the whole budget can never start, and fails with
//! that reason instead of waiting for ever.
//!
//! The cores are shared the same way: a run may keep busy its share of them, the share of the
//! budget it holds ([`MemoryReservation::threads`]), so the runs of a machine together start
//! about as many threads as it has cores instead of a pool as wide as the machine each.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The memory budget of this machine's processing runs.
#[derive(Debug)]
pub struct MemoryBudget {
    capacity: u64,
    in_use: Mutex<u64>,
    freed: Notify,
}

/// A run needs more than the whole budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("needs {need} bytes of memory, more than the whole budget of {capacity}")]
pub struct NeverFits {
    /// What the run needs.
    pub need: u64,
    /// The whole budget.
    pub capacity: u64,
}

impl MemoryBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        Self { capacity, in_use: Mutex::new(0), freed: Notify::new() }
    }

    /// The whole budget.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> u64 {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, u64> {
        // A plain counter cannot be left half-updated by a panic.
        self.in_use.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until `need` bytes fit, and reserves them until the guard is dropped.
    ///
    /// # Errors
    ///
    /// [`NeverFits`] at once when `need` is more than the whole budget.
    pub async fn reserve(self: &Arc<Self>, need: u64) -> Result<MemoryReservation, NeverFits> {
        if need > self.capacity {
            return Err(NeverFits { need, capacity: self.capacity });
        }
        loop {
            // Registered before looking, so a release between the look and the wait is not lost.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(reservation) = self.try_reserve(need) {
                return Ok(reservation);
            }
            freed.await;
        }
    }

    /// Reserves `need` bytes if they fit now.
    pub fn try_reserve(self: &Arc<Self>, need: u64) -> Option<MemoryReservation> {
        let mut in_use = self.lock();
        if in_use.saturating_add(need) > self.capacity {
            return None;
        }
        *in_use += need;
        Some(MemoryReservation { budget: Arc::clone(self), bytes: need })
    }
}

/// Memory reserved for one run; given back when dropped.
#[derive(Debug)]
pub struct MemoryReservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryReservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The threads a run holding this reservation may keep busy, out of `cores`: its share of
    /// the budget, rounded up, at least one. Runs that hold the whole budget between them use
    /// the cores between them, give or take one each for rounding.
    pub fn threads(&self, cores: usize) -> usize {
        let capacity = self.budget.capacity.max(1) as u128;
        let share = (cores as u128 * self.bytes as u128).div_ceil(capacity);
        usize::try_from(share).unwrap_or(cores).clamp(1, cores.max(1))
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        {
            let mut in_use = self.budget.lock();
            *in_use = in_use.saturating_sub(self.bytes);
        }
        self.budget.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_run_waits_for_room_and_gets_it_when_another_ends() {
        let budget = Arc::new(MemoryBudget::new(100));
        let first = budget.reserve(70).await.expect("fits");
        assert!(budget.try_reserve(40).is_none());
        let waiting = tokio::spawn({
            let budget = Arc::clone(&budget);
            async move { budget.reserve(40).await.map(|r| r.bytes()) }
        });
        // Not admitted while the first holds its room.
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        let got = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("admitted").expect("joins");
        assert_eq!(got, Ok(40));
        assert_eq!(budget.in_use(), 0, "the waiting run's guard was dropped with its task");
    }

    #[tokio::test]
    async fn a_run_keeps_busy_its_share_of_the_cores() {
        let budget = Arc::new(MemoryBudget::new(1000));
        let half = budget.reserve(500).await.expect("fits");
        assert_eq!(half.threads(8), 4);
        let small = budget.reserve(10).await.expect("fits");
        assert_eq!(small.threads(8), 1, "at least one, rounded up");
        drop((half, small));
        let whole = budget.reserve(1000).await.expect("fits");
        assert_eq!(whole.threads(8), 8);
        assert_eq!(whole.threads(1), 1);
    }

    #[tokio::test]
    async fn a_run_bigger_than_the_budget_never_fits() {
        let budget = Arc::new(MemoryBudget::new(100));
        assert_eq!(budget.reserve(101).await.unwrap_err(), NeverFits { need: 101, capacity: 100 });
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_cancelled_wait_reserves_nothing() {
        let budget = Arc::new(MemoryBudget::new(100));
        let held = budget.reserve(100).await.expect("fits");
        let waited = tokio::time::timeout(Duration::from_millis(10), budget.reserve(1)).await;
        assert!(waited.is_err());
        drop(held);
        assert_eq!(budget.in_use(), 0);
    }
}
