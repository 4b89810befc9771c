//! The four layers stacked as the facade stacks them — timeout(retry(rate limit(breaker(server))))
//! — cooperating on one deadline.

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{BoxService, Delivery, ErrorKind, Layer, McpService, Operation};
use tokio::time::Instant;

use crate::test_support::{err, secs, tool_call, Scripted, Step};
use crate::{
    BreakerPhase, BreakerPolicy, BreakerTransition, CircuitBreakerLayer, RetryLayer, RetryPolicy,
    TimeoutLayer, TimeoutPolicy,
};

#[cfg(feature = "rate-limit")]
use crate::{RateLimitLayer, RateLimitPolicy};

/// The rate limit of the stack: a specific one, or (by default) one too generous to matter.
#[cfg(feature = "rate-limit")]
fn rate_limited(service: BoxService, policy: Option<RateLimitPolicy>) -> BoxService {
    let policy = policy
        .unwrap_or_else(|| RateLimitPolicy::per_second(std::num::NonZeroU32::new(1000).unwrap()));
    Arc::new(RateLimitLayer::new(policy).layer(service))
}

fn stack(
    server: Arc<Scripted>,
    timeout: TimeoutPolicy,
    retry: RetryPolicy,
    breakers: &CircuitBreakerLayer,
    #[cfg(feature = "rate-limit")] rate_limit: Option<RateLimitPolicy>,
) -> BoxService {
    let service: BoxService = Arc::new(breakers.layer(server));
    #[cfg(feature = "rate-limit")]
    let service = rate_limited(service, rate_limit);
    Arc::new(TimeoutLayer::new(timeout).layer(RetryLayer::new(retry).layer(service)))
}

fn network() -> mcp_core::Error {
    err(ErrorKind::Network, Delivery::Sent)
}

fn no_jitter() -> RetryPolicy {
    RetryPolicy::default().with_jitter(0.0)
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_the_deadline_the_timeout_layer_set() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default().with_failure_threshold(100));
    let service = stack(
        server.clone(),
        TimeoutPolicy::default().with_default_timeout(Duration::from_secs(10)),
        no_jitter(),
        &breakers,
        #[cfg(feature = "rate-limit")]
        None,
    );
    let t0 = Instant::now();
    let error = service
        .call(Operation::new("ping", None))
        .await
        .unwrap_err();
    // Attempts at 0, 0, 1, 3, 7 s; the next wait (8 s) would end at 15 s, past the 10 s deadline.
    assert_eq!(server.gaps(), secs(&[0, 1, 2, 4]));
    assert_eq!(t0.elapsed(), Duration::from_secs(7));
    assert_eq!(
        error.kind(),
        ErrorKind::Network,
        "the last error, not a timeout"
    );
    let deadlines: Vec<_> = server.attempts().iter().map(|a| a.deadline).collect();
    assert_eq!(
        deadlines,
        vec![Some(t0 + Duration::from_secs(10)); 5],
        "one shared deadline"
    );
    assert_eq!(
        breakers.server_breaker().failures_in_window(),
        5,
        "every attempt counted"
    );
}

#[tokio::test(start_paused = true)]
async fn breaker_counts_every_attempt_and_its_opening_stops_the_retry() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = stack(
        server.clone(),
        TimeoutPolicy::default().with_default_timeout(Duration::from_secs(60)),
        no_jitter(),
        &breakers,
        #[cfg(feature = "rate-limit")]
        None,
    );
    let t0 = Instant::now();
    let error = service
        .call(Operation::new("tools/list", None).with_subject("catalog"))
        .await
        .unwrap_err();
    // Five failed attempts (at 0, 0, 1, 3, 7 s) open the breaker at 7 s; the sixth attempt, after
    // the 8 s wait, is refused by the breaker and the retry gives up at once.
    assert_eq!(server.calls(), 5);
    assert_eq!(t0.elapsed(), Duration::from_secs(15));
    assert_eq!(error.kind(), ErrorKind::CircuitOpen);
    assert_eq!(
        error.agent_message(),
        "tool catalog is temporarily disabled: the server failed repeatedly; retrying automatically in 22s"
    );
    assert_eq!(
        breakers.server_breaker().transitions(),
        [BreakerTransition {
            from: BreakerPhase::Closed,
            to: BreakerPhase::Open,
            at: t0 + Duration::from_secs(7)
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_attempt_is_cut_at_the_deadline_and_the_breaker_counts_it() {
    let server = Scripted::with_fallback(Step::Hang);
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = stack(
        server.clone(),
        TimeoutPolicy::default().with_tool_call_timeout(Duration::from_secs(5)),
        no_jitter(),
        &breakers,
        #[cfg(feature = "rate-limit")]
        None,
    );
    let t0 = Instant::now();
    let error = service.call(tool_call("search")).await.unwrap_err();
    assert_eq!(t0.elapsed(), Duration::from_secs(5));
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.subject(), Some("search"));
    assert_eq!(server.calls(), 1);
    assert_eq!(breakers.server_breaker().failures_in_window(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_side_effecting_tool_call_goes_out_once_through_the_whole_stack() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = stack(
        server.clone(),
        TimeoutPolicy::default(),
        no_jitter(),
        &breakers,
        #[cfg(feature = "rate-limit")]
        None,
    );
    let error = service.call(tool_call("delete_repo")).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Network);
    assert_eq!(server.calls(), 1);
}

#[cfg(feature = "rate-limit")]
#[tokio::test(start_paused = true)]
async fn rate_limit_waits_share_the_deadline_with_the_retries() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default().with_failure_threshold(100));
    let one_per_second = RateLimitPolicy::per_second(std::num::NonZeroU32::MIN);
    let service = stack(
        server.clone(),
        TimeoutPolicy::default().with_default_timeout(Duration::from_secs(10)),
        no_jitter(),
        &breakers,
        Some(one_per_second),
    );
    let t0 = Instant::now();
    let error = service
        .call(Operation::new("ping", None))
        .await
        .unwrap_err();
    // The immediate retry waits 1 s for its permit; the backoff waits (1, 2, 4 s) outlast the
    // limit's interval; the 8 s wait after the attempt at 8 s would pass the 10 s deadline.
    assert_eq!(server.gaps(), secs(&[1, 1, 2, 4]));
    assert_eq!(t0.elapsed(), Duration::from_secs(8));
    assert_eq!(error.kind(), ErrorKind::Network);
}

#[cfg(feature = "rate-limit")]
#[tokio::test(start_paused = true)]
async fn a_permit_past_the_deadline_fails_the_stack_at_once_without_touching_the_breaker() {
    let server = Scripted::new();
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = stack(
        server.clone(),
        TimeoutPolicy::default().with_tool_call_timeout(Duration::from_millis(500)),
        no_jitter(),
        &breakers,
        Some(RateLimitPolicy::per_second(std::num::NonZeroU32::MIN)),
    );
    service.call(tool_call("search")).await.unwrap();
    let t0 = Instant::now();
    let error = service.call(tool_call("search")).await.unwrap_err();
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(
        error.kind(),
        ErrorKind::RateLimited,
        "not retried, not a timeout"
    );
    assert_eq!(server.calls(), 1);
    assert_eq!(breakers.server_breaker().failures_in_window(), 0);
}

/// The same four policies composed by their `around`s in one future (as a stack without a
/// service per layer does) behave as the stacked services: one shared deadline, the retries
/// stopping before it, every attempt counted by the breaker.
#[tokio::test(start_paused = true)]
async fn the_policies_composed_by_their_arounds_share_the_deadline_as_the_layers_do() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default().with_failure_threshold(100));
    let timeout =
        TimeoutLayer::new(TimeoutPolicy::default().with_default_timeout(Duration::from_secs(10)));
    let retry = RetryLayer::new(no_jitter());
    #[cfg(feature = "rate-limit")]
    let limit = RateLimitLayer::new(RateLimitPolicy::per_second(
        std::num::NonZeroU32::new(1000).unwrap(),
    ));
    let attempt = |operation: Operation| {
        let call = |operation| breakers.around(operation, |operation| server.call(operation));
        #[cfg(feature = "rate-limit")]
        return limit.around(operation, call);
        #[cfg(not(feature = "rate-limit"))]
        call(operation)
    };
    let t0 = Instant::now();
    let error = timeout
        .around(Operation::new("ping", None), |operation| {
            retry.around(operation, attempt)
        })
        .await
        .unwrap_err();
    assert_eq!(server.gaps(), secs(&[0, 1, 2, 4]));
    assert_eq!(t0.elapsed(), Duration::from_secs(7));
    assert_eq!(error.kind(), ErrorKind::Network);
    let deadlines: Vec<_> = server.attempts().iter().map(|a| a.deadline).collect();
    assert_eq!(deadlines, vec![Some(t0 + Duration::from_secs(10)); 5]);
    assert_eq!(breakers.server_breaker().failures_in_window(), 5);
}
