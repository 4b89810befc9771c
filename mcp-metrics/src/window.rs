//! Calls per second over a sliding window: one atomic word per one-second bucket, updated
//! lock-free.
//!
//! Each bucket packs the second it counts (the high 40 bits: seconds since the registry was
//! made, enough for 34 000 years) and its count (the low 24 bits: 16.7 million calls in one
//! second of one series) into one `AtomicU64`, so moving a bucket on to a new second and
//! counting into it is one compare-and-swap — no lock, no lost count, no reset racing an
//! increment.

use std::sync::atomic::{AtomicU64, Ordering};

const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// The calls of the last `window` whole seconds (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct RateWindow {
    /// `window + 1` buckets: the current second's and the window's.
    buckets: Box<[AtomicU64]>,
    window: u64,
}

impl RateWindow {
    /// A window of `window` seconds (at least 1).
    pub(crate) fn new(window: u64) -> RateWindow {
        let window = window.max(1);
        let buckets = (0..=window).map(|_| AtomicU64::new(0)).collect();
        RateWindow { buckets, window }
    }

    /// Counts one call in second `second`.
    pub(crate) fn record(&self, second: u64) {
        let Some(bucket) = self.bucket(second) else {
            return;
        };
        let mut current = bucket.load(Ordering::Relaxed);
        loop {
            let counted = current >> COUNT_BITS;
            let next = if counted == second {
                if current & COUNT_MASK == COUNT_MASK {
                    return; // saturated
                }
                current + 1
            } else if counted > second {
                // A call that ended in a second whose bucket has moved on (it waited between
                // reading the clock and getting here): too old to count.
                return;
            } else {
                (second << COUNT_BITS) | 1
            };
            match bucket.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// Calls in the `window` whole seconds before second `now` (the current, partial second
    /// is not counted: the rate lags by at most a second but is never diluted).
    pub(crate) fn count(&self, now: u64) -> u64 {
        let oldest = now.saturating_sub(self.window);
        self.buckets
            .iter()
            .map(|bucket| bucket.load(Ordering::Relaxed))
            .filter(|word| {
                let second = word >> COUNT_BITS;
                second >= oldest && second < now
            })
            .map(|word| word & COUNT_MASK)
            .sum()
    }

    /// Calls per second over the window before second `now`.
    pub(crate) fn rate(&self, now: u64) -> f64 {
        self.count(now) as f64 / self.window as f64
    }

    fn bucket(&self, second: u64) -> Option<&AtomicU64> {
        if second >> (64 - COUNT_BITS) != 0 {
            return None; // beyond 34 000 years
        }
        let index = usize::try_from(second % self.buckets.len() as u64).ok()?;
        self.buckets.get(index)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_rate_is_the_calls_of_the_whole_seconds_in_the_window() {
        let window = RateWindow::new(10);
        for _ in 0..5 {
            window.record(0);
        }
        for _ in 0..15 {
            window.record(3);
        }
        // The current second is not counted yet.
        assert_eq!(window.count(0), 0);
        assert_eq!(window.count(1), 5);
        assert_eq!(window.count(4), 20);
        assert_eq!(window.rate(4), 2.0);
        // Second 0 leaves the window at 11, second 3 at 14.
        assert_eq!(window.count(10), 20);
        assert_eq!(window.count(11), 15);
        assert_eq!(window.count(13), 15);
        assert_eq!(window.count(14), 0);
    }

    #[test]
    fn a_bucket_reused_for_a_later_second_starts_from_zero() {
        let window = RateWindow::new(2);
        window.record(1);
        window.record(1);
        // Three buckets: second 4 reuses second 1's.
        window.record(4);
        assert_eq!(window.count(5), 1);
        // A late call of second 1 no longer counts anywhere.
        window.record(1);
        assert_eq!(window.count(2), 0);
        assert_eq!(window.count(5), 1);
    }

    #[test]
    fn concurrent_calls_are_all_counted() {
        let window = Arc::new(RateWindow::new(10));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let window = window.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        window.record(7);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(window.count(8), 80_000);
    }

    #[test]
    fn a_zero_window_is_one_second_and_absurd_seconds_are_ignored() {
        let window = RateWindow::new(0);
        window.record(0);
        assert_eq!(window.rate(1), 1.0);
        window.record(u64::MAX);
        assert_eq!(window.count(u64::MAX), 0);
    }
}
