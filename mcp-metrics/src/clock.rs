//! The registry's clock: nanoseconds since the registry was made, read twice per call.
//!
//! Two sources, chosen once, when the registry is made:
//!
//! - **The CPU's counter** (`quanta`: the time-stamp counter on x86-64, the system counter on
//!   ARM, calibrated against the OS's monotonic clock once per process, about 0.6 ms on this
//!   kind of machine): about 8 ns a read where `Instant::now()` (a vDSO `clock_gettime`) takes
//!   18–25 ns, and two reads are a fifth of the layer's per-call budget. Where the counter is
//!   unusable (not invariant, or another architecture) `quanta` reads the OS's monotonic clock
//!   instead: correct, only not faster.
//! - **Tokio's clock**, when it is paused as the registry is made — a
//!   `#[tokio::test(start_paused = true)]`, or after `tokio::time::pause()` — so a test drives
//!   latencies and the QPS window by advancing time, exactly as it did when every read was
//!   tokio's. A paused clock does not move between two reads; a running one does, so two reads
//!   in a row tell them apart (a clock too coarse to move between them is followed as if
//!   paused: slower, never wrong).
//!
//! A clock paused only after the registry is made is not followed: make the registry inside
//! the paused runtime (as its docs have always asked).

use std::time::Duration;

use tokio::time::Instant;

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// Nanoseconds since the registry was made (see the [module docs](self)).
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    /// The CPU's counter: raw readings from `epoch` on, scaled to nanoseconds.
    Counter { counter: quanta::Clock, epoch: u64 },
    /// Tokio's clock (paused when the registry was made).
    Tokio { epoch: Instant },
}

impl Clock {
    /// A clock starting now, on the source the [module docs](self) describe.
    pub(crate) fn new() -> Clock {
        if tokio_clock_is_frozen() {
            Clock::tokio(Instant::now())
        } else {
            let counter = quanta::Clock::new();
            let epoch = counter.raw();
            Clock {
                source: Source::Counter { counter, epoch },
            }
        }
    }

    /// A clock on tokio's clock, starting at `epoch`.
    pub(crate) fn tokio(epoch: Instant) -> Clock {
        Clock {
            source: Source::Tokio { epoch },
        }
    }

    /// Nanoseconds since the clock started (saturating at 584 years).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match &self.source {
            Source::Counter { counter, epoch } => counter.delta_as_nanos(*epoch, counter.raw()),
            Source::Tokio { epoch } => nanos(Instant::now().saturating_duration_since(*epoch)),
        }
    }

    /// The second (since the clock started) that `nanos` (a [`now`](Self::now)) falls in.
    #[inline]
    pub(crate) fn second(nanos: u64) -> u64 {
        nanos / NANOS_PER_SECOND
    }

    /// The current second.
    pub(crate) fn now_second(&self) -> u64 {
        Clock::second(self.now())
    }
}

/// Whether tokio's clock stands still between two reads: paused (or too coarse to see move).
fn tokio_clock_is_frozen() -> bool {
    Instant::now() == Instant::now()
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_clock_reads_the_counter_and_moves() {
        let clock = Clock::new();
        assert!(matches!(clock.source, Source::Counter { .. }));
        let before = clock.now();
        std::thread::sleep(Duration::from_millis(20));
        let slept = clock.now() - before;
        // Within the counter's calibration, and the sleep's overshoot.
        assert!((19_000_000..1_000_000_000).contains(&slept), "{slept}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_clock_is_followed() {
        let clock = Clock::new();
        assert!(matches!(clock.source, Source::Tokio { .. }));
        assert_eq!(clock.now(), 0);
        tokio::time::advance(Duration::from_millis(1_500)).await;
        assert_eq!(clock.now(), 1_500_000_000);
        assert_eq!(clock.now_second(), 1);
    }

    #[tokio::test]
    async fn a_running_tokio_clock_is_not_followed() {
        let clock = Clock::new();
        assert!(matches!(clock.source, Source::Counter { .. }));
    }
}
