//! Time arithmetic that never panics on what a user or a server supplied: deadlines that
//! saturate instead of overflowing, and durations written the way messages show them.

use std::time::Duration;

use tokio::time::Instant;

/// About 30 years: "never" for a deadline, and safely representable on every platform.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `now + after`, or a far-future instant if that overflows: a `u64::MAX` s timeout is "never".
pub fn deadline_after(now: Instant, after: Duration) -> Instant {
    now.checked_add(after)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

/// Formats a duration for messages: "30s", "1.5s", "250ms".
pub fn human_duration(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        let secs = d.as_secs_f64();
        if (secs - secs.round()).abs() < 0.05 {
            format!("{}s", secs.round() as u64)
        } else {
            format!("{secs:.1}s")
        }
    } else {
        format!("{}ms", d.as_millis())
    }
}
