//! Summaries of a sample of measurements (seconds, milliseconds, ratios), one definition for
//! every benchmark:
//! - the **median** is the middle value, or the mean of the middle two for an even count;
//! - a **percentile** is the nearest-rank one: the smallest value with at least `p` % of the
//!   sample at or below it (so p100 is the maximum);
//! - a **ratio** of two runs is taken per pair and summed up like any other sample ([`Spread`]).
//!
//! An empty sample gives NaN (printed as such) rather than a panic in the middle of a report.
//! NaN values sort last.

use std::time::Duration;

/// The median of `values` (mean of the middle two for an even count); NaN if empty.
pub fn median(values: &[f64]) -> f64 {
    let v = sorted(values);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// The nearest-rank percentile `p` (0 to 100) of `values`; NaN if empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let v = sorted(values);
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = (p * v.len() as f64 / 100.0).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// The smallest and the largest of `values`; (∞, −∞) if empty.
pub fn min_max(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)))
}

/// `numerators[i] / denominators[i]` for each pair (as many as the shorter slice has).
pub fn ratios(numerators: &[f64], denominators: &[f64]) -> Vec<f64> {
    numerators.iter().zip(denominators).map(|(a, b)| a / b).collect()
}

/// Median and range of a sample, as a ratio's table cell shows them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The smallest value.
    pub min: f64,
    /// The median.
    pub median: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`.
    pub fn of(values: &[f64]) -> Self {
        let (min, max) = min_max(values);
        Self { min, median: median(values), max }
    }
}

/// A sample of durations summed up: count, median, p99 and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// How many samples.
    pub n: usize,
    /// The median.
    pub median: Duration,
    /// The nearest-rank 99th percentile.
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

impl Latency {
    /// The summary of `samples`; all zero if there are none.
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self { n: 0, median: Duration::ZERO, p99: Duration::ZERO, max: Duration::ZERO };
        }
        let mut v = samples.to_vec();
        v.sort();
        let n = v.len();
        let at = |p: f64| v[((p * n as f64 / 100.0).ceil() as usize).clamp(1, n) - 1];
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2 };
        Self { n, median, p99: at(99.0), max: v[n - 1] }
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&v, 100.0), 20.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 50.0), 7.0);
        assert!(percentile(&[], 95.0).is_nan());
    }

    #[test]
    fn ratios_pair_up_and_spread_sums_them() {
        let r = ratios(&[2.0, 3.0, 9.0], &[1.0, 3.0, 3.0]);
        assert_eq!(r, vec![2.0, 1.0, 3.0]);
        assert_eq!(Spread::of(&r), Spread { min: 1.0, median: 2.0, max: 3.0 });
    }

    #[test]
    fn latency_uses_the_same_definitions() {
        let ms = |n: u64| Duration::from_millis(n);
        let samples: Vec<Duration> = (1..=100).rev().map(ms).collect();
        let l = Latency::of(&samples);
        assert_eq!((l.n, l.p99, l.max), (100, ms(99), ms(100)));
        assert_eq!(l.median, Duration::from_micros(50_500));
        assert_eq!(Latency::of(&[]).n, 0);
    }
}
