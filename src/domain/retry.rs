//! Backoff for retries: exponential, capped, with jitter so that many jobs failing together do
//! not come back together.

use std::time::Duration;

/// The wait before retry number `attempt` (1-based): `base · 2^(attempt-1)`, capped at `cap`,
/// then scaled into `[½, 1]` of itself by `jitter` ∈ [0, 1] ("equal jitter").
pub fn backoff(attempt: u32, base: Duration, cap: Duration, jitter: f64) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let full = exp.min(cap);
    full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// [`backoff`] with a random jitter.
pub fn backoff_jittered(attempt: u32, base: Duration, cap: Duration) -> Duration {
    backoff(attempt, base, cap, rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_exponentially_then_caps() {
        let b = Duration::from_secs(1);
        let cap = Duration::from_secs(60);
        assert_eq!(backoff(1, b, cap, 1.0), Duration::from_secs(1));
        assert_eq!(backoff(3, b, cap, 1.0), Duration::from_secs(4));
        assert_eq!(backoff(30, b, cap, 1.0), cap);
    }

    #[test]
    fn jitter_stays_within_half_and_full() {
        let b = Duration::from_secs(8);
        assert_eq!(backoff(1, b, b, 0.0), Duration::from_secs(4));
        assert_eq!(backoff(1, b, b, 7.0), Duration::from_secs(8));
    }
}
