//! Time as integer UTC milliseconds, and a clock that tests can move.
//!
//! Both storage backends keep time as `BIGINT` milliseconds, so comparisons in SQL and in Rust
//! agree exactly and a [`ManualClock`] can drive lease expiry and retention in tests.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// A point in time: milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The timestamp `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This moment moved forward by `d` (saturating).
    pub fn plus(self, d: Duration) -> Self {
        Self(self.0.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
    }

    /// This moment moved back by `d` (saturating).
    pub fn minus(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
    }

    /// How long from `self` until `later`; zero when `later` is not later.
    pub fn until(self, later: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(later.0.saturating_sub(self.0)).unwrap_or(0))
    }

    /// The calendar date in UTC as `YYYY-MM-DD`, the form people see in messages.
    pub fn date_utc(self) -> String {
        chrono::DateTime::from_timestamp_millis(self.0)
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_else(|| "(unknown date)".to_owned())
    }

    /// Date and time in UTC, `YYYY-MM-DD HH:MM UTC`, for status replies.
    pub fn datetime_utc(self) -> String {
        chrono::DateTime::from_timestamp_millis(self.0)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_else(|| "(unknown time)".to_owned())
    }

    /// RFC 3339 form for machine-readable output.
    pub fn rfc3339(self) -> String {
        chrono::DateTime::from_timestamp_millis(self.0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

/// Where "now" comes from. Services take a clock instead of calling the system directly.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The real wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp(ms)
    }
}

/// A clock that only moves when told to; shared by clones.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self(Arc::new(AtomicI64::new(start.0)))
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// A shared clock handle, as services hold it.
pub type SharedClock = Arc<dyn Clock>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_days() {
        // 2026-12-06T23:59:59.999Z
        let t = Timestamp::from_millis(1_796_601_599_999);
        assert_eq!(t.date_utc(), "2026-12-06");
        assert_eq!(t.plus(Duration::from_millis(1)).date_utc(), "2026-12-07");
    }

    #[test]
    fn until_never_goes_negative() {
        let a = Timestamp::from_millis(1_000);
        assert_eq!(a.until(Timestamp::from_millis(400)), Duration::ZERO);
        assert_eq!(a.until(Timestamp::from_millis(1_400)), Duration::from_millis(400));
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp::from_millis(5));
        assert_eq!(c.now(), Timestamp::from_millis(5));
        c.clone().advance(Duration::from_secs(2));
        assert_eq!(c.now(), Timestamp::from_millis(2_005));
    }
}
