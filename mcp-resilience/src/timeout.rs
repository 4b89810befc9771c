//! The per-request deadline as a layer: the one place a request's time budget is decided.
//!
//! [`TimeoutLayer`] gives each operation a budget — the caller's
//! [`RequestOptions::timeout`](mcp_core::RequestOptions::timeout) when set, else the policy's
//! timeout for the method — turns it into an absolute
//! [`deadline`](mcp_core::RequestOptions::deadline) (keeping an earlier one the caller set), and
//! stops waiting for the inner service at that deadline. Put it outermost: every retry, permit
//! wait and attempt below it then shares the one deadline.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_core::service::CallFuture;
use mcp_core::types::methods;
use mcp_core::{Delivery, Error, Layer, McpService, Operation, Payload};
use tokio::time::Instant;

use crate::instant_after;

/// How long requests may take, by method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeoutPolicy {
    /// The budget of a `tools/call`. Default: 30 s (the configuration's `tool_timeout_sec`).
    pub tool_call: Duration,
    /// The budget of every other method. Default: 30 s (the session's request timeout).
    pub default: Duration,
    /// Budgets of particular methods, overriding both of the above.
    pub per_method: BTreeMap<String, Duration>,
    /// Whether the layer also cuts the inner call at the deadline (a timer per call). Default:
    /// true. A stack whose every wait below is bounded by the deadline (the session, the
    /// facade's gate and pool, retry, rate limit all are) can turn it off and save the timer.
    pub backstop: bool,
}

impl Default for TimeoutPolicy {
    /// 30 s for `tools/call` and for every other method.
    fn default() -> Self {
        TimeoutPolicy {
            tool_call: Duration::from_secs(30),
            default: Duration::from_secs(30),
            per_method: BTreeMap::new(),
            backstop: true,
        }
    }
}

impl TimeoutPolicy {
    /// Sets the budget of `tools/call`.
    pub fn with_tool_call_timeout(mut self, timeout: Duration) -> Self {
        self.tool_call = timeout;
        self
    }

    /// Sets the budget of the methods without one of their own.
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default = timeout;
        self
    }

    /// Sets the budget of `method`.
    pub fn with_method_timeout(mut self, method: impl Into<String>, timeout: Duration) -> Self {
        self.per_method.insert(method.into(), timeout);
        self
    }

    /// Only sets deadlines: the inner call is trusted to end by them (see
    /// [`backstop`](Self::backstop)).
    pub fn without_backstop(mut self) -> Self {
        self.backstop = false;
        self
    }

    /// The budget of `method`: its own, else the `tools/call` one, else the default.
    pub fn timeout_for(&self, method: &str) -> Duration {
        if let Some(timeout) = self.per_method.get(method) {
            *timeout
        } else if method == methods::TOOLS_CALL {
            self.tool_call
        } else {
            self.default
        }
    }
}

/// Gives every operation its deadline (see the [module docs](self)).
#[derive(Debug, Clone, Default)]
pub struct TimeoutLayer {
    policy: Arc<TimeoutPolicy>,
}

impl TimeoutLayer {
    /// A layer with `policy`'s budgets.
    pub fn new(policy: TimeoutPolicy) -> Self {
        TimeoutLayer {
            policy: Arc::new(policy),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &TimeoutPolicy {
        &self.policy
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = TimeoutService<S>;

    fn layer(&self, inner: S) -> TimeoutService<S> {
        TimeoutService {
            inner,
            layer: self.clone(),
        }
    }
}

/// A service whose operations get a deadline (see [`TimeoutLayer`]).
#[derive(Debug, Clone)]
pub struct TimeoutService<S> {
    inner: S,
    layer: TimeoutLayer,
}

impl<S> TimeoutService<S> {
    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl TimeoutLayer {
    /// Gives `operation` its deadline (the caller's, or the policy's budget from now, whichever
    /// comes first) and calls `next` with it, bounded by it when the policy has a backstop —
    /// what [`TimeoutService`] does around its inner service, for a stack that composes its
    /// policies in one future instead of a service per layer.
    pub async fn around<F, Fut>(&self, mut operation: Operation, next: F) -> Result<Payload, Error>
    where
        F: FnOnce(Operation) -> Fut,
        Fut: Future<Output = Result<Payload, Error>>,
    {
        let started = Instant::now();
        // No deadline only when the budget is too large to represent and the caller set none:
        // then there is nothing to stop at.
        let Some(deadline) = set_deadline(&self.policy, started, &mut operation) else {
            return next(operation).await;
        };
        if !self.policy.backstop {
            return next(operation).await;
        }
        // Kept for the error: the inner call takes the operation.
        let method = operation.method.clone();
        let subject = operation.subject.clone();
        match tokio::time::timeout_at(deadline, next(operation)).await {
            Ok(result) => result,
            Err(_elapsed) => {
                let allowed = deadline.saturating_duration_since(started);
                let error = Error::timeout(format!("{method} did not finish within {allowed:?}"))
                    .with_delivery(Delivery::Sent);
                Err(match subject {
                    Some(subject) => error.with_subject(subject),
                    None => error,
                })
            }
        }
    }

    /// Gives `operation` its deadline — the caller's, or the policy's budget from now,
    /// whichever comes first — and returns it: the part of [`around`](Self::around) that sets
    /// the deadline, for a stack whose waits all end by it (a policy without a backstop needs
    /// nothing more).
    pub fn set_deadline(&self, operation: &mut Operation) -> Option<Instant> {
        set_deadline(&self.policy, Instant::now(), operation)
    }
}

/// The deadline of `operation`, started at `started`, set in its options and returned. `None`
/// only when the budget is too large to represent and the caller set none.
fn set_deadline(
    policy: &TimeoutPolicy,
    started: Instant,
    operation: &mut Operation,
) -> Option<Instant> {
    // A request whose deadline progress may reset is bounded by its hard cap here; the
    // session resets the relative deadline below it.
    let budget = match (
        operation.options.reset_timeout_on_progress,
        operation.options.max_total_time,
    ) {
        (Some(true), Some(cap)) => cap,
        _ => operation
            .options
            .timeout
            .unwrap_or_else(|| policy.timeout_for(&operation.method)),
    };
    if let Some(by_budget) = instant_after(started, budget) {
        operation.options.cap_deadline(by_budget);
    }
    operation.options.deadline
}

// Written out instead of with `async_trait`: the boxed future is the layer's `around`, not one
// more future around it holding a second copy of the operation.
impl<S: McpService> McpService for TimeoutService<S> {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(
            self.layer
                .around(operation, |operation| self.inner.call(operation)),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_core::{Delivery, ErrorKind, Layer, McpService, Operation, RequestOptions};
    use tokio::time::Instant;

    use super::*;
    use crate::test_support::{ok, tool_call, Scripted, Step};

    #[test]
    fn tool_calls_and_other_methods_have_their_own_budgets() {
        let defaults = TimeoutPolicy::default();
        assert_eq!(defaults.timeout_for("tools/call"), Duration::from_secs(30));
        assert_eq!(defaults.timeout_for("tools/list"), Duration::from_secs(30));
        let policy = TimeoutPolicy::default()
            .with_tool_call_timeout(Duration::from_secs(60))
            .with_default_timeout(Duration::from_secs(10))
            .with_method_timeout("resources/read", Duration::from_secs(120));
        assert_eq!(policy.timeout_for("tools/call"), Duration::from_secs(60));
        assert_eq!(policy.timeout_for("ping"), Duration::from_secs(10));
        assert_eq!(
            policy.timeout_for("resources/read"),
            Duration::from_secs(120)
        );
        let tool_override = policy.with_method_timeout("tools/call", Duration::from_secs(5));
        assert_eq!(
            tool_override.timeout_for("tools/call"),
            Duration::from_secs(5)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_inner_service_sees_the_deadline_of_the_methods_budget() {
        let server = Scripted::new();
        let policy = TimeoutPolicy::default()
            .with_tool_call_timeout(Duration::from_secs(60))
            .with_default_timeout(Duration::from_secs(10));
        let service = TimeoutLayer::new(policy).layer(server.clone());
        let t0 = Instant::now();
        service.call(tool_call("search")).await.unwrap();
        service.call(Operation::new("ping", None)).await.unwrap();
        let deadlines: Vec<_> = server.attempts().iter().map(|a| a.deadline).collect();
        assert_eq!(
            deadlines,
            [
                Some(t0 + Duration::from_secs(60)),
                Some(t0 + Duration::from_secs(10))
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_caller_deadline_is_kept_and_a_caller_timeout_wins() {
        let server = Scripted::new();
        let service = TimeoutLayer::default().layer(server.clone());
        let t0 = Instant::now();
        let early = t0 + Duration::from_secs(5);
        let late = t0 + Duration::from_secs(500);
        for options in [
            RequestOptions::new().with_deadline(early),
            RequestOptions::new().with_deadline(late),
            RequestOptions::new().with_timeout(Duration::from_secs(3)),
        ] {
            service
                .call(tool_call("search").with_options(options))
                .await
                .unwrap();
        }
        let deadlines: Vec<_> = server.attempts().iter().map(|a| a.deadline).collect();
        assert_eq!(
            deadlines,
            [
                Some(early),
                Some(t0 + Duration::from_secs(30)),
                Some(t0 + Duration::from_secs(3))
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hung_call_fails_with_a_timeout_exactly_at_the_deadline() {
        let server = Scripted::with_fallback(Step::Hang);
        let service = TimeoutLayer::default().layer(server.clone());
        let t0 = Instant::now();
        let error = service.call(tool_call("search")).await.unwrap_err();
        assert_eq!(t0.elapsed(), Duration::from_secs(30));
        assert_eq!(error.kind(), ErrorKind::Timeout);
        assert_eq!(error.message(), "tools/call did not finish within 30s");
        assert_eq!(error.subject(), Some("search"));
        assert_eq!(error.delivery(), Some(Delivery::Sent));
        assert_eq!(
            error.agent_message(),
            "tool search is unavailable: server not responding"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_reset_by_progress_gets_its_hard_cap_as_deadline() {
        let server = Scripted::new();
        let service = TimeoutLayer::default().layer(server.clone());
        let t0 = Instant::now();
        let options = RequestOptions::new()
            .with_timeout(Duration::from_secs(5))
            .with_reset_on_progress(Duration::from_secs(600));
        service
            .call(tool_call("search").with_options(options))
            .await
            .unwrap();
        assert_eq!(
            server.attempts()[0].deadline,
            Some(t0 + Duration::from_secs(600))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_the_backstop_only_the_deadline_is_set() {
        let server = Scripted::new().then_after(Duration::from_secs(45), ok());
        let policy = TimeoutPolicy::default().without_backstop();
        let service = TimeoutLayer::new(policy).layer(server.clone());
        let t0 = Instant::now();
        // The inner call overruns (a service that ignores its deadline): nothing cuts it.
        assert!(service.call(tool_call("search")).await.is_ok());
        assert_eq!(t0.elapsed(), Duration::from_secs(45));
        assert_eq!(
            server.attempts()[0].deadline,
            Some(t0 + Duration::from_secs(30))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_before_the_deadline_passes_through() {
        let server = Scripted::new().then_after(Duration::from_millis(29_999), ok());
        let service = TimeoutLayer::default().layer(server);
        assert!(service.call(tool_call("search")).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn an_absurd_budget_does_not_overflow() {
        let server = Scripted::new();
        let policy = TimeoutPolicy::default().with_tool_call_timeout(Duration::MAX);
        let service = TimeoutLayer::new(policy).layer(server.clone());
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(server.attempts()[0].deadline, None);
    }
}
