//! The stack composed in one future (`StackService`) does what the stacked layers did: one
//! measured call however many attempts, one deadline for all of them, every attempt through
//! the breaker (and the rate limit).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{Delivery, Error, ErrorKind, McpService, Operation, Payload};
use mcp_resilience::{
    BreakerPolicy, CircuitBreakerLayer, RetryLayer, RetryPolicy, TimeoutLayer, TimeoutPolicy,
};
use tokio::time::Instant;

use super::{Gate, StackService};

/// Fails the first `failures` attempts with a network error that never reached the server
/// (so even a side-effecting call is retried), then answers; records each attempt's deadline.
struct FailingFirst {
    failures: usize,
    deadlines: Mutex<Vec<Option<Instant>>>,
}

#[async_trait]
impl McpService for FailingFirst {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        let mut deadlines = self.deadlines.lock().unwrap();
        deadlines.push(operation.options.deadline);
        if deadlines.len() <= self.failures {
            return Err(Error::new(ErrorKind::Network, "connection refused")
                .with_delivery(Delivery::NotSent));
        }
        Ok(Payload::Value(serde_json::json!({"content": []})))
    }
}

fn stack(server: Arc<FailingFirst>, metrics: &mcp_metrics::Metrics) -> StackService {
    StackService {
        metrics: metrics.layer("s", "pipe"),
        timeout: TimeoutLayer::new(
            TimeoutPolicy::default()
                .with_default_timeout(Duration::from_secs(10))
                .with_tool_call_timeout(Duration::from_secs(10))
                .without_backstop(),
        ),
        retry: Some(RetryLayer::new(RetryPolicy::default().with_jitter(0.0))),
        #[cfg(feature = "rate-limit")]
        rate_limit: Some(mcp_resilience::RateLimitLayer::new(
            mcp_resilience::RateLimitPolicy::per_second(std::num::NonZeroU32::new(1000).unwrap()),
        )),
        breakers: Some(CircuitBreakerLayer::for_server(
            "s",
            BreakerPolicy::default()
                .with_failure_threshold(100)
                .with_failure_rule(super::breaker_counts),
        )),
        gate: Gate::Scripted(server),
    }
}

#[tokio::test(start_paused = true)]
async fn one_measured_call_one_deadline_and_every_attempt_through_the_breaker() {
    let server = Arc::new(FailingFirst {
        failures: 2,
        deadlines: Mutex::new(Vec::new()),
    });
    let metrics = mcp_metrics::Metrics::new();
    let stack = stack(server.clone(), &metrics);
    let started = Instant::now();
    let result = stack
        .call_in_place(Operation::call_tool("search", None))
        .await;
    assert!(result.is_ok(), "{result:?}");
    // Immediately, then after 1 s: the retry's schedule, within the one deadline.
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    let deadlines = server.deadlines.lock().unwrap().clone();
    assert_eq!(
        deadlines,
        vec![Some(started + Duration::from_secs(10)); 3],
        "three attempts, one deadline set before the first"
    );
    let snapshot = metrics.server_snapshot("s").unwrap();
    assert_eq!(
        (snapshot.calls, snapshot.errors),
        (1, 0),
        "one call as the caller saw it"
    );
    let breakers = stack.breakers.as_ref().unwrap();
    // Each failed attempt counted (the facade's rule counts network errors), the third's
    // success recorded: the breaker is closed with nothing in flight.
    assert_eq!(breakers.server_breaker().failures_in_window(), 2);
    assert!(breakers.server_breaker().try_acquire(None).is_ok());
}

#[tokio::test(start_paused = true)]
async fn the_same_stack_handed_out_as_a_service_behaves_the_same() {
    let server = Arc::new(FailingFirst {
        failures: 1,
        deadlines: Mutex::new(Vec::new()),
    });
    let metrics = mcp_metrics::Metrics::new();
    let stack: Arc<StackService> = Arc::new(stack(server.clone(), &metrics));
    let service: mcp_core::BoxService = stack;
    let result = service.call(Operation::call_tool("search", None)).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(server.deadlines.lock().unwrap().len(), 2);
    assert_eq!(metrics.server_snapshot("s").unwrap().calls, 1);
}
