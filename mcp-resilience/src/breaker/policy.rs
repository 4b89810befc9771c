//! When a breaker opens and how it recovers: [`BreakerPolicy`], and the [`FailureRule`] that
//! decides which errors count as failures.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::{Error, ErrorKind};

/// Decides whether an error counts as a failure of the server (see
/// [`counts_as_failure_by_default`]). Results that are `Ok` — a tool's own `isError` result
/// included — are never failures.
pub type FailureRule = Arc<dyn Fn(&Error) -> bool + Send + Sync>;

/// The default [`FailureRule`]: the errors that say the server is unwell —
/// [`ErrorKind::Network`] (connection failures; HTTP 5xx answers), [`ErrorKind::Timeout`] and
/// [`ErrorKind::ServerUnavailable`]. Not counted: `InvalidParams`, `ToolNotFound`, `Auth`,
/// `PermissionDenied`, `Resource`, `Tool`, `Protocol`, `StaleCache`, and the client's own
/// refusals `CircuitOpen` and `RateLimited`.
pub fn counts_as_failure_by_default(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::Network | ErrorKind::Timeout | ErrorKind::ServerUnavailable
    )
}

/// When a [`CircuitBreaker`](super::CircuitBreaker) opens and how it recovers.
#[derive(Clone)]
pub struct BreakerPolicy {
    /// Failures within [`window`](Self::window) that open the breaker. Default: 5 (at least 1).
    pub failure_threshold: u32,
    /// How far back failures are counted. Default: 60 s.
    pub window: Duration,
    /// How long the breaker stays open before probing. Default: 30 s.
    pub open_for: Duration,
    /// Probe calls admitted at once while half-open. Default: 3 (at least 1).
    pub half_open_probes: u32,
    /// One breaker per tool for `tools/call` (other methods use the server's breaker), rather
    /// than one for the whole server. Default: false.
    pub per_tool: bool,
    /// Which errors count as failures. Default: [`counts_as_failure_by_default`].
    pub counts_as_failure: FailureRule,
}

impl Default for BreakerPolicy {
    /// 5 failures within 60 s open the breaker for 30 s; then 3 probes; one breaker per server.
    fn default() -> Self {
        BreakerPolicy {
            failure_threshold: 5,
            window: Duration::from_secs(60),
            open_for: Duration::from_secs(30),
            half_open_probes: 3,
            per_tool: false,
            counts_as_failure: Arc::new(counts_as_failure_by_default),
        }
    }
}

impl fmt::Debug for BreakerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerPolicy")
            .field("failure_threshold", &self.failure_threshold)
            .field("window", &self.window)
            .field("open_for", &self.open_for)
            .field("half_open_probes", &self.half_open_probes)
            .field("per_tool", &self.per_tool)
            .finish_non_exhaustive()
    }
}

impl BreakerPolicy {
    /// Sets how many failures within the window open the breaker.
    pub fn with_failure_threshold(mut self, failures: u32) -> Self {
        self.failure_threshold = failures;
        self
    }

    /// Sets how far back failures are counted.
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Sets the cool-down.
    pub fn with_open_for(mut self, open_for: Duration) -> Self {
        self.open_for = open_for;
        self
    }

    /// Sets how many probes run at once while half-open.
    pub fn with_half_open_probes(mut self, probes: u32) -> Self {
        self.half_open_probes = probes;
        self
    }

    /// One breaker per tool for `tools/call`.
    pub fn per_tool(mut self) -> Self {
        self.per_tool = true;
        self
    }

    /// Replaces the rule that decides which errors count as failures.
    pub fn with_failure_rule(
        mut self,
        rule: impl Fn(&Error) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.counts_as_failure = Arc::new(rule);
        self
    }

    pub(super) fn threshold(&self) -> usize {
        usize::try_from(self.failure_threshold.max(1)).unwrap_or(usize::MAX)
    }

    pub(super) fn probes(&self) -> u32 {
        self.half_open_probes.max(1)
    }
}
