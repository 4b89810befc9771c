use std::time::Duration;

use tokio::time::Instant;

use mcp_core::time::*;

#[test]
fn huge_timeouts_saturate() {
    let now = Instant::now();
    assert!(deadline_after(now, Duration::MAX) > now + Duration::from_secs(365 * 24 * 3600));
    assert_eq!(
        deadline_after(now, Duration::from_secs(3)),
        now + Duration::from_secs(3)
    );
}

#[test]
fn durations_read_like_messages() {
    assert_eq!(human_duration(Duration::from_secs(30)), "30s");
    assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
    assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
}
