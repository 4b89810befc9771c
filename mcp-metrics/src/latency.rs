//! Duration histograms: hdrhistogram at microsecond resolution for calls (millisecond for
//! sessions), and their summary.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// A call longer than an hour is recorded as an hour: a histogram never grows past it.
const LONGEST_CALL_US: u64 = 3_600_000_000;
/// A session longer than 30 days is recorded as 30 days.
const LONGEST_SESSION_MS: u64 = 30 * 24 * 3_600_000;

/// Durations in one unit: the histogram and the exact sum (for means and Prometheus `_sum`).
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    histogram: Histogram<u64>,
    sum: u64,
    /// Exact (the histogram's own maximum is its bucket's upper end).
    max: u64,
    unit: Unit,
    longest: u64,
}

/// The unit a histogram records in: a closed set, so converting a duration divides by a
/// constant (a multiply), not by a run-time value.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Micros,
    Millis,
}

impl Latency {
    /// Call durations in microseconds, keeping `significant_figures` digits (1–5; values
    /// outside are clamped) of each. The histogram starts small and grows to the range it is
    /// given.
    pub(crate) fn micros(significant_figures: u8) -> Latency {
        Latency::new(significant_figures, Unit::Micros, LONGEST_CALL_US)
    }

    /// Session durations in milliseconds.
    pub(crate) fn millis(significant_figures: u8) -> Latency {
        Latency::new(significant_figures, Unit::Millis, LONGEST_SESSION_MS)
    }

    fn new(significant_figures: u8, unit: Unit, longest: u64) -> Latency {
        let histogram = Histogram::new(significant_figures.clamp(1, 5))
            .or_else(|_| Histogram::new(2))
            .unwrap_or_else(|_| unreachable_histogram());
        Latency {
            histogram,
            sum: 0,
            max: 0,
            unit,
            longest,
        }
    }

    /// Records one duration.
    pub(crate) fn record(&mut self, duration: Duration) {
        // Saturating at 584 years, far past the cap.
        self.record_nanos(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Records one duration given in nanoseconds (the layer's clock's unit).
    #[inline]
    pub(crate) fn record_nanos(&mut self, nanos: u64) {
        // By a constant: a multiply, not a division.
        let units = match self.unit {
            Unit::Micros => nanos / 1_000,
            Unit::Millis => nanos / 1_000_000,
        }
        .min(self.longest);
        // Grows the histogram to a new range (an allocation, once per doubling); cannot
        // otherwise fail below the cap, and if it did the value would be saturated.
        if self.histogram.record(units).is_err() {
            self.histogram.saturating_record(units);
        }
        self.sum = self.sum.saturating_add(units);
        self.max = self.max.max(units);
    }

    /// Adds `other`'s durations to these (a server's summary over its operations).
    pub(crate) fn merge(&mut self, other: &Latency) {
        // Both auto-resize, so adding cannot fail for a range; if it ever did, the merged
        // summary would lack `other`, which is better than a panic.
        if self.histogram.add(&other.histogram).is_ok() {
            self.sum = self.sum.saturating_add(other.sum);
            self.max = self.max.max(other.max);
        }
    }

    /// The summary, in the histogram's unit (microseconds for calls, milliseconds for
    /// sessions).
    pub(crate) fn summary(&self) -> LatencySummary {
        let h = &self.histogram;
        let count = h.len();
        if count == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            count,
            sum_us: self.sum,
            mean_us: self.sum as f64 / count as f64,
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            max_us: self.max,
        }
    }
}

/// `Histogram::new(2)` only fails for an invalid precision, which 2 is not; this keeps the
/// crate free of `unwrap` without pretending a second fallback exists.
#[cold]
fn unreachable_histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, 2, 1) {
        Ok(h) => h,
        Err(e) => unreachable!("hdrhistogram refused its smallest valid configuration: {e:?}"),
    }
}

/// Latencies of a series (or merged over a server's series), in microseconds. Quantiles are
/// accurate to the histogram's precision (two significant digits by default: within 1 %);
/// the count, sum, mean and maximum are exact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Durations recorded.
    pub count: u64,
    /// Their sum.
    pub sum_us: u64,
    /// Their mean.
    pub mean_us: f64,
    /// The median.
    pub p50_us: u64,
    /// The 90th percentile.
    pub p90_us: u64,
    /// The 99th percentile.
    pub p99_us: u64,
    /// The longest.
    pub max_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within_one_percent(actual: u64, expected: u64) -> bool {
        actual.abs_diff(expected) * 100 <= expected
    }

    #[test]
    fn quantiles_of_known_durations() {
        let mut latency = Latency::micros(2);
        // 1..=100 ms, one each.
        for ms in 1..=100 {
            latency.record(Duration::from_millis(ms));
        }
        let s = latency.summary();
        assert_eq!(s.count, 100);
        assert_eq!(s.sum_us, 5_050_000);
        assert_eq!(s.mean_us, 50_500.0);
        assert_eq!(s.max_us, 100_000);
        for (actual, expected) in [(s.p50_us, 50_000), (s.p90_us, 90_000), (s.p99_us, 99_000)] {
            assert!(
                within_one_percent(actual, expected),
                "{actual} vs {expected}"
            );
        }
    }

    #[test]
    fn merging_adds_the_durations_of_both() {
        let mut fast = Latency::micros(2);
        let mut slow = Latency::micros(2);
        for _ in 0..98 {
            fast.record(Duration::from_micros(100));
        }
        slow.record(Duration::from_secs(2));
        slow.record(Duration::from_secs(2));
        let mut merged = Latency::micros(2);
        merged.merge(&fast);
        merged.merge(&slow);
        let s = merged.summary();
        assert_eq!(s.count, 100);
        assert!(within_one_percent(s.p50_us, 100));
        assert!(within_one_percent(s.p99_us, 2_000_000));
        assert_eq!(s.sum_us, 98 * 100 + 4_000_000);
    }

    #[test]
    fn an_empty_histogram_summarizes_to_zeros_and_huge_durations_are_capped() {
        assert_eq!(Latency::micros(2).summary(), LatencySummary::default());
        let mut latency = Latency::micros(9);
        latency.record(Duration::MAX);
        latency.record(Duration::ZERO);
        let s = latency.summary();
        assert_eq!(s.count, 2);
        assert_eq!(s.max_us, LONGEST_CALL_US);
        let mut sessions = Latency::millis(2);
        sessions.record(Duration::from_secs(90));
        sessions.record(Duration::from_secs(90 * 24 * 3600));
        let s = sessions.summary();
        assert!(within_one_percent(s.p50_us, 90_000));
        assert_eq!(s.max_us, LONGEST_SESSION_MS);
    }
}
