//! `mcp-resilience`: policies as layers around any [`mcp_core::McpService`].
//!
//! Each policy is one [`Layer`](mcp_core::Layer), configured by one policy value whose
//! `Default` is the documented default:
//!
//! | module | layer | what it does | defaults |
//! |---|---|---|---|
//! | [`retry`] | [`RetryLayer`] | sends a failed request again, when that is useful and safe | retry immediately, then after 1 s, 2 s, 4 s, 8 s (±25 % jitter); at most 5 retries and 30 s of waiting |
//! | [`breaker`] | [`CircuitBreakerLayer`] | stops calling a server (or tool) that keeps failing | opens after 5 failures within 60 s, for 30 s; then 3 probe calls |
//! | `rate_limit` | `RateLimitLayer` | caps the calls per second to one server (feature `rate-limit`) | 5 calls/s, burst 10; waits for a permit within the deadline |
//! | [`timeout`] | [`TimeoutLayer`] | gives every request one deadline that all its attempts share | 30 s for `tools/call`, 30 s for every other method |
//!
//! Each layer's logic is one `around(operation, next)` function on the layer
//! ([`RetryLayer::around`], [`TimeoutLayer::around`], [`CircuitBreakerLayer::around`],
//! `RateLimitLayer::around`): its service boxes it around the inner service, and a stack may
//! compose the `around`s in one future instead of a service per layer.
//!
//! # Stacking them
//!
//! From the inside out: session (or pool) → breaker → rate limit → retry → timeout. The timeout
//! is outermost so that every retry shares its deadline; the breaker is innermost so that it
//! sees (and counts) every attempt, and an open breaker fails the retry at once; the rate limit
//! sits inside the retry so that every attempt takes a permit.
//!
//! ```no_run
//! # #[cfg(feature = "rate-limit")]
//! # async fn run(session: mcp_session::ClientSession) -> Result<(), mcp_core::Error> {
//! use mcp_core::{Layer, McpServiceExt, RequestOptions};
//! use mcp_resilience::{
//!     BreakerPolicy, CircuitBreakerLayer, RateLimitLayer, RateLimitPolicy, RetryLayer,
//!     RetryPolicy, TimeoutLayer, TimeoutPolicy,
//! };
//!
//! let breakers = CircuitBreakerLayer::for_server("github", BreakerPolicy::default().per_tool());
//! let service = TimeoutLayer::new(TimeoutPolicy::default()).layer(
//!     RetryLayer::new(RetryPolicy::default()).layer(
//!         RateLimitLayer::new(RateLimitPolicy::default()).layer(breakers.layer(session)),
//!     ),
//! );
//!
//! let result = service
//!     .call_tool("search", Some(serde_json::json!({"q": "mcp"})), RequestOptions::new())
//!     .await?;
//! // The facade keeps `breakers` (a cheap clone of shared handles) to show their state.
//! println!("{:?} {}", breakers.server_breaker().state(), result.text());
//! # Ok(()) }
//! ```
//!
//! # What counts as a failure
//!
//! The circuit breaker counts an outcome as a failure of the server when its
//! [`FailureRule`] says so. The default rule, [`counts_as_failure_by_default`], counts the
//! errors that say the *server* is unwell:
//!
//! - [`ErrorKind::Network`](mcp_core::ErrorKind::Network): the connection failed, closed or
//!   could not be made (HTTP transports report 5xx answers this way too);
//! - [`ErrorKind::Timeout`](mcp_core::ErrorKind::Timeout): no answer in time (a call still
//!   running when its deadline passes and the call is abandoned counts too);
//! - [`ErrorKind::ServerUnavailable`](mcp_core::ErrorKind::ServerUnavailable).
//!
//! It does not count anything that says the *request* was wrong or that the server answered:
//! a tool result with `isError: true` (that is a successful call), `InvalidParams`,
//! `ToolNotFound`, `Auth`, `PermissionDenied`, `Resource`, `Tool`, `Protocol`, nor the
//! client's own refusals (`CircuitOpen`, `RateLimited`). Replace the rule with
//! [`BreakerPolicy::with_failure_rule`].
//!
//! While half-open, a probe that fails by the rule reopens the breaker; a probe that succeeds,
//! or fails in a way the rule does not count (the server answered), closes it; a probe whose
//! error proves it never reached the server, or that the caller abandoned before its deadline,
//! decides nothing and frees its slot.
//!
//! Successes do not reset the failure count while the breaker is closed: five failures within
//! 60 s open it however many successes came between them (a server failing one call in three is
//! unwell). Only time forgets a failure.
//!
//! # Deadlines
//!
//! Every wait in this crate — a retry's backoff, a wait for a rate-limit permit — is bounded by
//! the operation's deadline ([`RequestOptions::deadline`](mcp_core::RequestOptions::deadline)):
//! a layer that would have to wait until or past it fails at once instead. All timekeeping uses
//! [`tokio::time::Instant`], so tests drive it with tokio's paused clock.

#![warn(missing_docs)]

pub mod breaker;
#[cfg(feature = "rate-limit")]
pub mod clock;
#[cfg(feature = "rate-limit")]
pub mod rate_limit;
pub mod retry;
pub mod timeout;

pub use breaker::{
    counts_as_failure_by_default, BreakerPermit, BreakerPhase, BreakerPolicy, BreakerRejection,
    BreakerSnapshot, BreakerState, BreakerTransition, CircuitBreaker, CircuitBreakerLayer,
    CircuitBreakerService, FailureRule, GuardedCall,
};
#[cfg(feature = "rate-limit")]
pub use rate_limit::{
    RateLimitLayer, RateLimitMode, RateLimitPolicy, RateLimitService, SharedPermits,
};
pub use retry::{
    is_retried_kind, should_retry, Backoff, Delays, RetryLayer, RetryPolicy, RetryService,
};
pub use timeout::{TimeoutLayer, TimeoutPolicy, TimeoutService};

use std::time::Duration;

use tokio::time::Instant;

/// `now + after`, or `None` when that instant cannot be represented (an absurd configured
/// duration): callers treat `None` as "later than any deadline".
fn instant_after(now: Instant, after: Duration) -> Option<Instant> {
    now.checked_add(after)
}

/// A duration as the whole seconds an agent is told: rounded up, at least 1 (so "retry in 0s"
/// is never said while the wait is not over).
fn whole_seconds_up(duration: Duration) -> Duration {
    let seconds = duration
        .as_secs()
        .saturating_add(u64::from(duration.subsec_nanos() > 0));
    Duration::from_secs(seconds.max(1))
}

#[cfg(test)]
mod composition_tests;
#[cfg(test)]
mod test_support;
