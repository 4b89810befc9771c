//! Calls per second over a sliding window: one word per one-second bucket.
//!
//! Each bucket packs the second it counts (the high 40 bits: seconds since the registry was
//! made, enough for 34 000 years) and its count (the low 24 bits: 16.7 million calls in one
//! second of one series) into one `u64`, so moving a bucket on to a new second and counting
//! into it is one write. A series keeps its window under the lock it already takes for its
//! counts and histogram: counting a call costs no atomic operation of its own (a
//! compare-and-swap per call, which a lock-free window needs, costs about as much as the
//! lock).

const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// The calls of the last `window` whole seconds (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct RateWindow {
    /// `window + 1` buckets: the current second's and the window's.
    buckets: Box<[u64]>,
    window: u64,
    /// The second of the first call: until the window has passed since, the rate is the calls
    /// so far over the series' age (a new series is not diluted over a window it did not live).
    first: Option<u64>,
    /// `u64::MAX / buckets.len() + 1`: finds a second's bucket with two multiplies instead
    /// of a division (see [`RateWindow::index`]).
    reciprocal: u64,
}

impl RateWindow {
    /// A window of `window` seconds (at least 1).
    pub(crate) fn new(window: u64) -> RateWindow {
        let window = window.max(1);
        let buckets: Box<[u64]> = (0..=window).map(|_| 0).collect();
        let reciprocal = (u64::MAX / buckets.len() as u64).wrapping_add(1);
        RateWindow {
            buckets,
            window,
            first: None,
            reciprocal,
        }
    }

    /// Counts one call in second `second`.
    #[inline]
    pub(crate) fn record(&mut self, second: u64) {
        if self.first.is_none() {
            self.first = Some(second);
        }
        let Some(bucket) = self.bucket(second) else {
            return;
        };
        let counted = *bucket >> COUNT_BITS;
        if counted == second {
            if *bucket & COUNT_MASK != COUNT_MASK {
                *bucket += 1;
            } // else saturated
        } else if counted < second {
            *bucket = (second << COUNT_BITS) | 1;
        }
        // else: a call that ended in a second whose bucket has moved on (it waited between
        // reading the clock and getting here): too old to count.
    }

    /// Calls in the `window` whole seconds before second `now` (the current, partial second
    /// is not counted: the rate lags by at most a second but is never diluted).
    pub(crate) fn count(&self, now: u64) -> u64 {
        let oldest = now.saturating_sub(self.window);
        self.buckets
            .iter()
            .copied()
            .filter(|word| {
                let second = word >> COUNT_BITS;
                second >= oldest && second < now
            })
            .map(|word| word & COUNT_MASK)
            .sum()
    }

    /// Calls per second: over the window's whole seconds before second `now`; for a series
    /// younger than the window, its calls so far (the current second's included) over its
    /// age in whole seconds, at least one.
    pub(crate) fn rate(&self, now: u64) -> f64 {
        match self.first {
            Some(first) if now.saturating_sub(first) < self.window => {
                let so_far: u64 = self
                    .buckets
                    .iter()
                    .copied()
                    .filter(|word| {
                        let second = word >> COUNT_BITS;
                        second >= first && second <= now
                    })
                    .map(|word| word & COUNT_MASK)
                    .sum();
                so_far as f64 / (now - first).max(1) as f64
            }
            _ => self.count(now) as f64 / self.window as f64,
        }
    }

    #[inline]
    fn bucket(&mut self, second: u64) -> Option<&mut u64> {
        if second >> (64 - COUNT_BITS) != 0 {
            return None; // beyond 34 000 years
        }
        let index = usize::try_from(self.index(second)).ok()?;
        self.buckets.get_mut(index)
    }

    /// `second % buckets.len()`. For 32-bit operands (136 years of seconds; windows of
    /// fewer than 4 billion seconds) by Lemire's direct computation of the remainder (exact
    /// there: Lemire, Kaser and Kurz, "Faster Remainder by Direct Computation", 2019), else
    /// by division.
    #[inline]
    fn index(&self, second: u64) -> u64 {
        let len = self.buckets.len() as u64;
        if second <= u64::from(u32::MAX) && len <= u64::from(u32::MAX) {
            let low = self.reciprocal.wrapping_mul(second);
            ((u128::from(low) * u128::from(len)) >> 64) as u64
        } else {
            second % len
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_the_calls_of_the_whole_seconds_in_the_window() {
        let mut window = RateWindow::new(10);
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
        // Younger than the window: its calls over its age.
        assert_eq!(window.rate(0), 5.0);
        assert_eq!(window.rate(4), 5.0);
        assert_eq!(window.rate(10), 2.0);
        // Second 0 leaves the window at 11, second 3 at 14.
        assert_eq!(window.count(10), 20);
        assert_eq!(window.count(11), 15);
        assert_eq!(window.count(13), 15);
        assert_eq!(window.count(14), 0);
    }

    #[test]
    fn a_bucket_reused_for_a_later_second_starts_from_zero() {
        let mut window = RateWindow::new(2);
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
    fn buckets_are_found_as_by_division() {
        for window in [1, 2, 9, 10, 59, 60, 300, 3_600, 86_400] {
            let rate = RateWindow::new(window);
            let len = window + 1;
            let seconds = (0..10_000)
                .chain((0..64).map(|shift| 1u64 << shift))
                .chain([u64::from(u32::MAX) - 1, u64::from(u32::MAX), u64::MAX]);
            for second in seconds {
                assert_eq!(rate.index(second), second % len, "{second} % {len}");
            }
        }
    }

    #[test]
    fn a_zero_window_is_one_second_and_absurd_seconds_are_ignored() {
        let mut window = RateWindow::new(0);
        window.record(0);
        assert_eq!(window.rate(1), 1.0);
        window.record(u64::MAX);
        assert_eq!(window.count(u64::MAX), 0);
    }
}
