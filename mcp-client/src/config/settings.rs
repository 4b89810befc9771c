//! Harness settings: optional extra fields on each server entry, with the seed's defaults
//! (mission §4, §5).
//!
//! | field | default |
//! |---|---|
//! | `startup_timeout_sec` (or `startup_timeout_ms`) | 10 s (connect timeout) |
//! | `tool_timeout_sec` | 30 s (request timeout) |
//! | `idle_timeout_sec` | 300 s |
//! | `pool.min` / `pool.max` | 2 / 10 |
//! | `retry.max_retries` / `retry.max_wait_sec` / `retry.jitter` | 5 / 30 s / 0.25 |
//! | `breaker.failure_threshold` / `window_sec` / `cooldown_sec` / `half_open_max_requests` | 5 / 60 s / 30 s / 3 |
//! | `breaker.per_tool` | false (one breaker per server) |
//! | `rate_limit.calls_per_sec` / `burst` / `wait` | none (no limit) / = calls_per_sec / true |
//! | `probe_interval_sec` | 30 s (how often an unavailable server is tried again, and how often each endpoint of a server with `endpoints` is probed) |
//! | `failback_after_sec` | 30 s (how long an endpoint that failed must answer probes before traffic moves back to it) |
//!
//! Which of these apply depends on the profile (see `StackPolicy` in the facade): `minimal`
//! tries 3 times in all (2 retries) with a fixed 1 s wait and has no breaker or pool; `professional` adds
//! backoff retry and pools for remote servers; `enterprise` adds the breaker, rate limits and
//! load-sized pools.

use std::time::Duration;

/// Default time allowed for a server to start and complete `initialize` (seed: connect 10 s).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time allowed for one tool call (seed: request 30 s).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);
/// Default idle time after which a connection is closed (seed: idle 300 s).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default time between attempts at bringing an unavailable server back.
pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_secs(30);
/// Default time an endpoint that failed must answer its probes before traffic moves back.
pub const DEFAULT_FAILBACK_AFTER: Duration = Duration::from_secs(30);

/// Per-server harness settings beyond the transport.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessSettings {
    /// Idle connections are closed after this long (`idle_timeout_sec`, default 300 s).
    pub idle_timeout: Duration,
    /// Connection pool bounds (`pool`).
    pub pool: PoolSettings,
    /// Retry with exponential backoff (`retry`).
    pub retry: RetrySettings,
    /// Circuit breaker (`breaker`).
    pub breaker: BreakerSettings,
    /// Client-side rate limit (`rate_limit`); `None`: no limit.
    pub rate_limit: Option<RateLimitSettings>,
    /// How often an unavailable server is tried again, and each endpoint of a server with
    /// `endpoints` is probed (`probe_interval_sec`, default 30 s).
    pub probe_interval: Duration,
    /// How long an endpoint that failed must answer its probes before traffic moves back to
    /// it (`failback_after_sec`, default 30 s; servers with `endpoints` only).
    pub failback_after: Duration,
}

impl Default for HarnessSettings {
    fn default() -> Self {
        HarnessSettings {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            pool: PoolSettings::default(),
            retry: RetrySettings::default(),
            breaker: BreakerSettings::default(),
            rate_limit: None,
            probe_interval: DEFAULT_PROBE_INTERVAL,
            failback_after: DEFAULT_FAILBACK_AFTER,
        }
    }
}

/// Connection pool bounds (`pool: { min, max }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSettings {
    /// Connections kept open (default 2). Must not exceed `max`.
    pub min: u32,
    /// Most connections at once (default 10, at least 1).
    pub max: u32,
    /// Whether the configuration names a `pool` (stdio servers are pooled only then).
    pub configured: bool,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            min: 2,
            max: 10,
            configured: false,
        }
    }
}

/// Retry policy (`retry: { max_retries, max_wait_sec, jitter }`).
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySettings {
    /// Retries after the first attempt (default 5; 0 disables retrying).
    pub max_retries: u32,
    /// Longest wait between attempts (default 30 s).
    pub max_wait: Duration,
    /// Random spread of each wait, as a fraction in [0, 1] (default 0.25 = ±25 %).
    pub jitter: f64,
    /// Whether the configuration names a `retry` (the `minimal` profile's fixed retry then
    /// takes `max_retries` from it).
    pub configured: bool,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            max_retries: 5,
            max_wait: Duration::from_secs(30),
            jitter: 0.25,
            configured: false,
        }
    }
}

/// Circuit breaker (`breaker: { failure_threshold, window_sec, cooldown_sec,
/// half_open_max_requests }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Failures within `window` that open the breaker (default 5, at least 1).
    pub failure_threshold: u32,
    /// Sliding window for counting failures (default 60 s).
    pub window: Duration,
    /// Time the breaker stays open before probing (default 30 s).
    pub cooldown: Duration,
    /// Probe requests admitted while half-open (default 3, at least 1).
    pub half_open_max_requests: u32,
    /// One breaker per tool as well as the server's (default false).
    pub per_tool: bool,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        BreakerSettings {
            failure_threshold: 5,
            window: Duration::from_secs(60),
            cooldown: Duration::from_secs(30),
            half_open_max_requests: 3,
            per_tool: false,
        }
    }
}

/// A client-side rate limit (`rate_limit: { calls_per_sec, burst, wait }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitSettings {
    /// Calls per second, sustained (≥ 1).
    pub calls_per_sec: u32,
    /// Calls that may go at once after a quiet spell (default: `calls_per_sec`).
    pub burst: u32,
    /// Over the limit: wait for a permit within the call's deadline (`true`, the default) or
    /// fail at once (`false`).
    pub wait: bool,
    /// Whose limit it is: this process's (the default) or the whole fleet's, counted in the
    /// shared store (`scope: "fleet"`, with a top-level `store`).
    pub scope: RateLimitScope,
}

/// Whose calls a rate limit counts (`rate_limit.scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateLimitScope {
    /// This process's calls (`"process"`, the default).
    #[default]
    Process,
    /// The calls of every process sharing the store (`"fleet"`): one limit across replicas,
    /// kept in Redis; while Redis is unreachable each process falls back to the full limit
    /// locally.
    Fleet,
}

impl HarnessSettings {
    /// Checks the cross-field rules; on failure returns the field path and what is wrong.
    ///
    /// Rules: `pool.max ≥ 1`, `pool.min ≤ pool.max`, `retry.jitter` in [0, 1], durations > 0,
    /// `breaker.failure_threshold ≥ 1`, `breaker.half_open_max_requests ≥ 1`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.pool.max < 1 {
            return Err(("pool.max", "expected a number ≥ 1, found 0".to_owned()));
        }
        if self.pool.min > self.pool.max {
            return Err((
                "pool",
                format!(
                    "expected pool.min ≤ pool.max, found min {} > max {}",
                    self.pool.min, self.pool.max
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.retry.jitter) {
            return Err((
                "retry.jitter",
                format!(
                    "expected a fraction between 0 and 1, found {}",
                    self.retry.jitter
                ),
            ));
        }
        if self.breaker.failure_threshold < 1 {
            return Err((
                "breaker.failure_threshold",
                "expected a number ≥ 1, found 0".to_owned(),
            ));
        }
        if self.breaker.half_open_max_requests < 1 {
            return Err((
                "breaker.half_open_max_requests",
                "expected a number ≥ 1, found 0".to_owned(),
            ));
        }
        if let Some(limit) = &self.rate_limit {
            if limit.calls_per_sec < 1 {
                return Err((
                    "rate_limit.calls_per_sec",
                    "expected a number ≥ 1, found 0".to_owned(),
                ));
            }
            if limit.burst < 1 {
                return Err((
                    "rate_limit.burst",
                    "expected a number ≥ 1, found 0".to_owned(),
                ));
            }
        }
        for (field, duration) in [
            ("idle_timeout_sec", self.idle_timeout),
            ("probe_interval_sec", self.probe_interval),
            ("retry.max_wait_sec", self.retry.max_wait),
            ("breaker.window_sec", self.breaker.window),
            ("breaker.cooldown_sec", self.breaker.cooldown),
        ] {
            if duration.is_zero() {
                return Err((field, "expected a duration > 0, found 0".to_owned()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seeds() {
        let s = HarnessSettings::default();
        assert_eq!(s.idle_timeout, Duration::from_secs(300));
        assert_eq!(s.pool.min, 2);
        assert_eq!(s.pool.max, 10);
        assert_eq!(s.probe_interval, Duration::from_secs(30));
        assert_eq!(s.rate_limit, None);
        assert!(!s.breaker.per_tool);
        assert_eq!(s.retry.max_retries, 5);
        assert_eq!(s.retry.max_wait, Duration::from_secs(30));
        assert_eq!(s.retry.jitter, 0.25);
        assert_eq!(s.breaker.failure_threshold, 5);
        assert_eq!(s.breaker.window, Duration::from_secs(60));
        assert_eq!(s.breaker.cooldown, Duration::from_secs(30));
        assert_eq!(s.breaker.half_open_max_requests, 3);
        assert!(s.validate().is_ok());
    }

    #[test]
    fn validation_names_the_field() {
        let mut s = HarnessSettings::default();
        s.pool.min = 11;
        assert_eq!(s.validate().unwrap_err().0, "pool");
        let mut s = HarnessSettings::default();
        s.retry.jitter = 1.5;
        assert_eq!(s.validate().unwrap_err().0, "retry.jitter");
        let mut s = HarnessSettings::default();
        s.breaker.half_open_max_requests = 0;
        assert_eq!(
            s.validate().unwrap_err().0,
            "breaker.half_open_max_requests"
        );
        let mut s = HarnessSettings::default();
        s.breaker.cooldown = Duration::ZERO;
        assert_eq!(s.validate().unwrap_err().0, "breaker.cooldown_sec");
    }
}
