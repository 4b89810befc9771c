//! A [`governor`] clock on [`tokio::time::Instant`], so the rate limiter keeps the same time as
//! tokio's timers — and follows tokio's paused clock in tests.
//!
//! governor's own clocks read the system's monotonic clock, which a paused tokio runtime does
//! not stop: a limiter on them would disagree with `tokio::time::sleep` about how long a wait
//! took. `tokio::time::Instant` reads the same monotonic clock when the runtime runs normally.

use std::ops::Add;
use std::time::Duration;

use governor::clock::{Clock, ReasonablyRealtime, Reference};
use governor::nanos::Nanos;

/// An instant of tokio's clock, as governor's [`Reference`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TokioInstant(pub tokio::time::Instant);

/// Nanoseconds of a duration, saturating (governor's own conversion panics past ~584 years).
fn nanos(duration: Duration) -> Nanos {
    Nanos::from(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX))
}

impl Add<Nanos> for TokioInstant {
    type Output = TokioInstant;

    fn add(self, other: Nanos) -> TokioInstant {
        let other = Duration::from(other);
        // Past the representable range: far in the future (never "now", which would allow).
        TokioInstant(mcp_core::time::deadline_after(self.0, other))
    }
}

impl Reference for TokioInstant {
    fn duration_since(&self, earlier: Self) -> Nanos {
        nanos(self.0.saturating_duration_since(earlier.0))
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        self.0
            .checked_sub(Duration::from(duration))
            .map_or(*self, TokioInstant)
    }
}

/// governor's [`Clock`] reading [`tokio::time::Instant::now`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    type Instant = TokioInstant;

    fn now(&self) -> TokioInstant {
        TokioInstant(tokio::time::Instant::now())
    }
}

impl ReasonablyRealtime for TokioClock {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_the_paused_tokio_clock() {
        let clock = TokioClock;
        let before = clock.now();
        tokio::time::advance(Duration::from_millis(250)).await;
        let after = clock.now();
        assert_eq!(
            after.duration_since(before),
            nanos(Duration::from_millis(250))
        );
        assert_eq!(before.duration_since(after), nanos(Duration::ZERO));
        assert_eq!(before + nanos(Duration::from_millis(250)), after);
        assert_eq!(
            after.saturating_sub(nanos(Duration::from_millis(250))),
            before
        );
    }

    #[test]
    fn huge_durations_saturate() {
        assert_eq!(nanos(Duration::MAX), Nanos::from(u64::MAX));
    }
}
