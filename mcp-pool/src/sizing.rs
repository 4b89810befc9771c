//! Load-sized mode: how many sessions may be in use at once follows the load.
//!
//! A [`Sizer`] sits in front of bb8's `get`: a [`Semaphore`] holds one permit per session that
//! may be in use (the *target*), and a caller takes a permit before it asks bb8 for a session,
//! and gives it back with the session. bb8's `max_size` stays the hard cap; bb8 still opens
//! sessions on demand and keeps `min_idle` idle ones ready, so the sessions open are at most the
//! target plus `min_idle`, within `max_size`.
//!
//! How it decides:
//! - The target starts at `max(min_idle, 1)`.
//! - **Grow**: a caller that finds no permit free (the target is all in use) adds one permit —
//!   the target grows by one — before it waits, as long as the target is below `max_size`. So
//!   every caller that would have to wait grows the pool by one, and the target ends up at the
//!   peak number of concurrent calls. (Waiting for bb8 to open a session does not count: the
//!   target was not the limit.)
//! - **Shrink**: once per `idle_timeout` period, if the number of sessions in use never reached
//!   the target during the period (there was spare capacity the whole time), the target shrinks
//!   by one, never below its start. A spare permit is taken and forgotten, so calls in flight
//!   are never affected. The sessions themselves are closed by bb8's reaper once idle.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The adjustable limit of sessions in use at once (see the module documentation).
#[derive(Debug)]
pub(crate) struct Sizer {
    permits: Arc<Semaphore>,
    /// Permits in existence (held or free).
    target: AtomicU32,
    /// Permits held right now.
    in_use: AtomicU32,
    /// Most permits held at once during the current period.
    peak: AtomicU32,
    min: u32,
    max: u32,
}

/// A permit to use one session; given back on drop.
#[derive(Debug)]
pub(crate) struct SizedPermit {
    _permit: OwnedSemaphorePermit,
    sizer: Arc<Sizer>,
}

impl Drop for SizedPermit {
    fn drop(&mut self) {
        self.sizer.in_use.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Sizer {
    /// A target of `min`, between `min` and `max` (`1 <= min <= max` assumed; corrected if not).
    pub(crate) fn new(min: u32, max: u32) -> Self {
        let max = max.max(1);
        let min = min.clamp(1, max);
        Sizer {
            permits: Arc::new(Semaphore::new(min as usize)),
            target: AtomicU32::new(min),
            in_use: AtomicU32::new(0),
            peak: AtomicU32::new(0),
            min,
            max,
        }
    }

    /// The current target.
    pub(crate) fn target(&self) -> u32 {
        self.target.load(Ordering::Acquire)
    }

    /// A permit if one is free now.
    pub(crate) fn try_acquire(self: &Arc<Self>) -> Option<SizedPermit> {
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        Some(self.held(permit))
    }

    /// Waits for a permit, growing the target by one first (the caller had to wait). `None`
    /// once the sizer is closed.
    pub(crate) async fn acquire_growing(self: &Arc<Self>) -> Option<SizedPermit> {
        self.grow();
        let permit = self.permits.clone().acquire_owned().await.ok()?;
        Some(self.held(permit))
    }

    fn held(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> SizedPermit {
        let now = self.in_use.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        SizedPermit {
            _permit: permit,
            sizer: self.clone(),
        }
    }

    /// One more permit, unless the target is at the maximum.
    fn grow(&self) {
        let grown = self
            .target
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t < self.max).then_some(t + 1)
            });
        if let Ok(from) = grown {
            self.permits.add_permits(1);
            tracing::debug!(target_size = from + 1, "load-sized pool grows");
        }
    }

    /// The end of one idle period: shrink by one if the target was never reached in it.
    pub(crate) fn end_period(&self) {
        let in_use = self.in_use.load(Ordering::Acquire);
        let peak = self.peak.swap(in_use, Ordering::AcqRel);
        if peak >= self.target() {
            return;
        }
        // A free permit exists (fewer are held than exist); take it out of circulation.
        let Ok(spare) = self.permits.try_acquire() else {
            return;
        };
        let shrunk = self
            .target
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t > self.min).then_some(t - 1)
            });
        if let Ok(from) = shrunk {
            spare.forget();
            tracing::debug!(target_size = from - 1, "load-sized pool shrinks");
        }
    }

    /// Wakes every waiting caller with `None` (the pool is closed).
    pub(crate) fn close(&self) {
        self.permits.close();
    }
}

/// The sizing loop: one [`Sizer::end_period`] per `period`.
pub(crate) async fn run(sizer: Arc<Sizer>, period: Duration) {
    let mut ticks = tokio::time::interval_at(
        mcp_core::time::deadline_after(tokio::time::Instant::now(), period),
        period,
    );
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        sizer.end_period();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiting_callers_grow_the_target_one_each_up_to_the_maximum() {
        let sizer = Arc::new(Sizer::new(1, 3));
        let first = sizer.try_acquire().expect("one permit to start with");
        assert!(sizer.try_acquire().is_none(), "the target is all in use");
        let second = sizer.acquire_growing().await.expect("grown by one");
        assert_eq!(sizer.target(), 2);
        let third = sizer.acquire_growing().await.expect("grown by one");
        assert_eq!(sizer.target(), 3);
        // At the maximum a waiting caller waits for a permit to come back.
        let waiter = {
            let sizer = sizer.clone();
            tokio::spawn(async move { sizer.acquire_growing().await.is_some() })
        };
        tokio::task::yield_now().await;
        assert_eq!(sizer.target(), 3, "never above the maximum");
        drop(first);
        assert!(waiter.await.expect("the waiter ends"));
        drop((second, third));
    }

    #[tokio::test]
    async fn an_idle_period_with_spare_capacity_shrinks_by_one_down_to_the_start() {
        let sizer = Arc::new(Sizer::new(1, 4));
        let held: Vec<_> = {
            let mut held = vec![sizer.try_acquire().expect("a permit")];
            for _ in 0..3 {
                held.push(sizer.acquire_growing().await.expect("grown"));
            }
            held
        };
        assert_eq!(sizer.target(), 4);
        sizer.end_period();
        assert_eq!(sizer.target(), 4, "the target was reached in this period");
        drop(held);
        let mut seen = Vec::new();
        for _ in 0..5 {
            sizer.end_period();
            seen.push(sizer.target());
        }
        // The first of these periods began with all four in use: no spare capacity in it.
        assert_eq!(seen, vec![4, 3, 2, 1, 1]);
    }

    #[tokio::test]
    async fn the_target_never_drops_below_its_start() {
        let sizer = Arc::new(Sizer::new(2, 4));
        let a = sizer.try_acquire().expect("a permit");
        let b = sizer.try_acquire().expect("a permit");
        drop((a, b));
        sizer.end_period();
        assert_eq!(sizer.target(), 2, "at the start already");
        let c = sizer.try_acquire().expect("a permit");
        sizer.end_period();
        assert_eq!(sizer.target(), 2, "never below the start");
        drop(c);
    }

    #[tokio::test]
    async fn closing_wakes_waiters_with_nothing() {
        let sizer = Arc::new(Sizer::new(1, 1));
        let held = sizer.try_acquire().expect("a permit");
        let waiter = {
            let sizer = sizer.clone();
            tokio::spawn(async move { sizer.acquire_growing().await.is_none() })
        };
        tokio::task::yield_now().await;
        sizer.close();
        assert!(waiter.await.expect("the waiter ends"));
        drop(held);
    }
}
