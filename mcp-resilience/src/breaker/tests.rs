//! The circuit breaker's tests: the policy, the state machine at exact instants, and the layer
//! (per-tool breakers, what counts as a failure).

use std::sync::Arc;
use std::time::Duration;

use mcp_core::{Delivery, Error, ErrorKind, Layer, McpService, Operation, Payload};
use serde_json::json;
use tokio::time::{advance, Instant};

use super::*;
use crate::test_support::{err, ok, tool_call, Scripted, Step};

fn network() -> Error {
    err(ErrorKind::Network, Delivery::Sent)
}

fn transition(from: BreakerPhase, to: BreakerPhase, at: Instant) -> BreakerTransition {
    BreakerTransition { from, to, at }
}

use BreakerPhase::{Closed, HalfOpen, Open};

/// Fails `n` calls through `service` at the current instant.
async fn fail_times<S: McpService>(service: &S, operation: &Operation, n: usize) {
    for _ in 0..n {
        let error = service.call(operation.clone()).await.unwrap_err();
        assert_ne!(error.kind(), ErrorKind::CircuitOpen, "opened too early");
    }
}

#[test]
fn defaults_are_five_failures_in_sixty_seconds_thirty_seconds_open_three_probes() {
    let policy = BreakerPolicy::default();
    assert_eq!(policy.failure_threshold, 5);
    assert_eq!(policy.window, Duration::from_secs(60));
    assert_eq!(policy.open_for, Duration::from_secs(30));
    assert_eq!(policy.half_open_probes, 3);
    assert!(!policy.per_tool);
}

#[test]
fn default_rule_counts_network_timeout_and_server_unavailable_only() {
    let counted: Vec<_> = ErrorKind::ALL
        .into_iter()
        .filter(|kind| counts_as_failure_by_default(&Error::new(*kind, "x")))
        .collect();
    assert_eq!(
        counted,
        [
            ErrorKind::Network,
            ErrorKind::Timeout,
            ErrorKind::ServerUnavailable
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_reset_closes_an_open_breaker_and_ignores_older_calls() {
    let breaker = CircuitBreaker::new("s", BreakerPolicy::default().with_failure_threshold(2));
    let old = breaker.try_acquire(None).unwrap();
    for _ in 0..2 {
        breaker.try_acquire(None).unwrap().record_error(&network());
    }
    assert_eq!(breaker.phase(), BreakerPhase::Open);
    breaker.reset();
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(breaker.failures_in_window(), 0);
    // A call from before the reset says nothing now.
    old.record_error(&network());
    assert_eq!(breaker.failures_in_window(), 0);
    let transitions: Vec<_> = breaker
        .transitions()
        .iter()
        .map(|t| (t.from, t.to))
        .collect();
    assert_eq!(
        transitions,
        [
            (BreakerPhase::Closed, BreakerPhase::Open),
            (BreakerPhase::Open, BreakerPhase::Closed)
        ]
    );
    // Resetting a closed breaker changes nothing.
    breaker.reset();
    assert_eq!(breaker.transition_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn opens_after_five_counted_failures_within_sixty_seconds() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    let breaker = breakers.server_breaker().clone();
    let t0 = Instant::now();
    let ping = Operation::new("ping", None);
    for i in 0..4 {
        fail_times(&service, &ping, 1).await;
        advance(Duration::from_secs(10)).await;
        assert_eq!(
            breaker.state(),
            BreakerState::Closed,
            "after {} failures",
            i + 1
        );
    }
    assert_eq!(breaker.failures_in_window(), 4);
    fail_times(&service, &ping, 1).await; // the fifth, at t0 + 40 s
    assert_eq!(
        breaker.state(),
        BreakerState::Open {
            remaining: Duration::from_secs(30)
        }
    );
    assert_eq!(
        breaker.transitions(),
        [transition(Closed, Open, t0 + Duration::from_secs(40))]
    );
    assert_eq!(breaker.times_opened(), 1);
    assert_eq!(breaker.failures_in_window(), 0, "cleared on opening");
    assert_eq!(server.calls(), 5);
}

#[tokio::test(start_paused = true)]
async fn failures_older_than_the_window_are_forgotten() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    let breaker = breakers.server_breaker().clone();
    let ping = Operation::new("ping", None);
    // Failures at 0, 15, 30, 45 s; at 60 s the first is 60 s old and no longer counts.
    for _ in 0..4 {
        fail_times(&service, &ping, 1).await;
        advance(Duration::from_secs(15)).await;
    }
    assert_eq!(breaker.failures_in_window(), 3);
    fail_times(&service, &ping, 1).await;
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(breaker.failures_in_window(), 4);
    advance(Duration::from_secs(1)).await;
    fail_times(&service, &ping, 1).await; // 15, 30, 45, 60, 61: five within 60 s
    assert_eq!(breaker.phase(), Open);
}

#[tokio::test(start_paused = true)]
async fn successes_do_not_reset_the_failure_window() {
    let server = Scripted::new();
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    let ping = Operation::new("ping", None);
    for round in 0..5 {
        server.push(Err(network()));
        service.call(ping.clone()).await.unwrap_err();
        if round < 4 {
            for _ in 0..10 {
                service.call(ping.clone()).await.unwrap();
            }
            assert_eq!(breakers.server_breaker().phase(), Closed);
        }
    }
    assert_eq!(breakers.server_breaker().phase(), Open);
    assert_eq!(server.calls(), 5 + 4 * 10);
}

#[tokio::test(start_paused = true)]
async fn open_breaker_fails_at_once_without_calling_the_server() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::for_server("github", BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    fail_times(&service, &tool_call("search"), 5).await;
    let before = Instant::now();
    let error = service.call(tool_call("search")).await.unwrap_err();
    assert_eq!(Instant::now(), before, "no wait");
    assert_eq!(server.calls(), 5, "nothing sent");
    assert_eq!(error.kind(), ErrorKind::CircuitOpen);
    assert_eq!(error.delivery(), Some(Delivery::NotSent));
    assert_eq!(error.subject(), Some("search"));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(30)));
    assert!(error.message().contains("github"), "{}", error.message());
}

#[tokio::test(start_paused = true)]
async fn circuit_open_message_tells_the_real_seconds_left() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    fail_times(&service, &tool_call("search"), 5).await;
    let message = |error: Error| error.agent_message();
    let call = || service.call(tool_call("search"));
    assert_eq!(
        message(call().await.unwrap_err()),
        "tool search is temporarily disabled: the server failed repeatedly; retrying automatically in 30s"
    );
    advance(Duration::from_secs(18)).await;
    assert_eq!(
        message(call().await.unwrap_err()),
        "tool search is temporarily disabled: the server failed repeatedly; retrying automatically in 12s"
    );
    advance(Duration::from_millis(500)).await; // 11.5 s left: rounded up
    assert_eq!(
        call().await.unwrap_err().retry_after(),
        Some(Duration::from_secs(12))
    );
    advance(Duration::from_millis(11_400)).await; // 0.1 s left: at least 1 s
    assert_eq!(
        call().await.unwrap_err().retry_after(),
        Some(Duration::from_secs(1))
    );
}

#[tokio::test(start_paused = true)]
async fn closed_open_half_open_closed_at_exact_instants() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    let breaker = breakers.server_breaker().clone();
    let mut phases = breaker.subscribe();
    let t0 = Instant::now();
    fail_times(&service, &Operation::new("ping", None), 5).await;
    assert!(phases.has_changed().unwrap());
    assert_eq!(*phases.borrow_and_update(), Open);

    advance(Duration::from_secs(29)).await;
    assert_eq!(
        breaker.state(),
        BreakerState::Open {
            remaining: Duration::from_secs(1)
        }
    );
    // Noticed five seconds late, but recorded at the end of the cool-down.
    advance(Duration::from_secs(6)).await;
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    assert_eq!(*phases.borrow_and_update(), HalfOpen);

    // The probe takes 2 s and succeeds.
    let server_ok = Scripted::new().then_after(Duration::from_secs(2), ok());
    let probe_service = breakers.layer(server_ok.clone());
    probe_service
        .call(Operation::new("ping", None))
        .await
        .unwrap();
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(*phases.borrow_and_update(), Closed);
    assert_eq!(
        breaker.transitions(),
        [
            transition(Closed, Open, t0),
            transition(Open, HalfOpen, t0 + Duration::from_secs(30)),
            transition(HalfOpen, Closed, t0 + Duration::from_secs(37)),
        ]
    );
    assert_eq!(breaker.failures_in_window(), 0);
    assert_eq!(breaker.transition_count(), 3);
    assert_eq!(breaker.times_opened(), 1);
}

#[tokio::test(start_paused = true)]
async fn probe_failure_reopens_with_a_new_cool_down() {
    let server = Scripted::failing(network());
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    let breaker = breakers.server_breaker().clone();
    let t0 = Instant::now();
    fail_times(&service, &Operation::new("ping", None), 5).await;
    advance(Duration::from_secs(30)).await;
    // The probe fails after 1 s.
    let slow_failure = Scripted::new().then_after(Duration::from_secs(1), Err(network()));
    breakers
        .layer(slow_failure)
        .call(Operation::new("ping", None))
        .await
        .unwrap_err();
    assert_eq!(
        breaker.state(),
        BreakerState::Open {
            remaining: Duration::from_secs(30)
        }
    );
    advance(Duration::from_secs(30)).await;
    assert_eq!(breaker.phase(), HalfOpen);
    assert_eq!(
        breaker.transitions(),
        [
            transition(Closed, Open, t0),
            transition(Open, HalfOpen, t0 + Duration::from_secs(30)),
            transition(HalfOpen, Open, t0 + Duration::from_secs(31)),
            transition(Open, HalfOpen, t0 + Duration::from_secs(61)),
        ]
    );
    assert_eq!(breaker.times_opened(), 2);
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_at_most_three_concurrent_probes() {
    let breaker = CircuitBreaker::new("server", BreakerPolicy::default());
    for _ in 0..5 {
        breaker.try_acquire(None).unwrap().record_error(&network());
    }
    advance(Duration::from_secs(30)).await;
    let probes: Vec<_> = (0..3).map(|_| breaker.try_acquire(None).unwrap()).collect();
    assert!(probes.iter().all(BreakerPermit::is_probe));
    assert_eq!(breaker.snapshot().probes_in_flight, 3);
    let fourth = breaker.try_acquire(None).unwrap_err();
    assert_eq!(fourth.phase, HalfOpen);
    assert_eq!(fourth.retry_after, Duration::from_secs(1));
    // A probe abandoned before any deadline frees its slot and decides nothing.
    let mut probes = probes.into_iter();
    drop(probes.next());
    assert_eq!(breaker.phase(), HalfOpen);
    let replacement = breaker.try_acquire(None).unwrap();
    assert!(breaker.try_acquire(None).is_err());
    // One success closes the breaker; the other probes' outcomes are then stale.
    replacement.record_success();
    assert_eq!(breaker.phase(), Closed);
    for probe in probes {
        probe.record_error(&network());
    }
    assert_eq!(breaker.phase(), Closed);
    assert_eq!(breaker.failures_in_window(), 0);
}

#[tokio::test(start_paused = true)]
async fn layer_fails_a_fourth_call_at_once_while_three_probes_are_in_flight() {
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    fail_times(
        &breakers.layer(Scripted::failing(network())),
        &Operation::new("ping", None),
        5,
    )
    .await;
    advance(Duration::from_secs(30)).await;
    let slow = Scripted::with_fallback(Step::Reply {
        delay: Duration::from_secs(5),
        result: ok(),
    });
    let service = Arc::new(breakers.layer(slow.clone()));
    let probes: Vec<_> = (0..3)
        .map(|_| {
            let service = service.clone();
            tokio::spawn(async move { service.call(Operation::new("ping", None)).await })
        })
        .collect();
    slow.wait_for_calls(3).await;
    let started = Instant::now();
    let error = service.call(tool_call("search")).await.unwrap_err();
    assert_eq!(Instant::now(), started);
    assert_eq!(error.kind(), ErrorKind::CircuitOpen);
    assert_eq!(error.subject(), Some("search"));
    assert_eq!(slow.calls(), 3);
    for probe in probes {
        probe.await.unwrap().unwrap();
    }
    assert_eq!(breakers.server_breaker().phase(), Closed);
    service.call(Operation::new("ping", None)).await.unwrap();
    assert_eq!(slow.calls(), 4);
}

#[tokio::test(start_paused = true)]
async fn per_tool_breakers_are_independent() {
    let server = Scripted::new();
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default().per_tool());
    let service = breakers.layer(server.clone());
    for _ in 0..5 {
        server.push(Err(network()));
        service.call(tool_call("flaky")).await.unwrap_err();
    }
    let flaky = breakers.tool_breaker("flaky").unwrap();
    assert_eq!(flaky.phase(), Open);
    assert_eq!(
        service.call(tool_call("flaky")).await.unwrap_err().kind(),
        ErrorKind::CircuitOpen
    );
    service.call(tool_call("steady")).await.unwrap();
    service
        .call(Operation::new("tools/list", None))
        .await
        .unwrap();
    assert_eq!(breakers.tool_breaker("steady").unwrap().phase(), Closed);
    assert_eq!(breakers.server_breaker().phase(), Closed);
    assert_eq!(breakers.server_breaker().failures_in_window(), 0);
    let names: Vec<_> = breakers
        .tool_breakers()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["flaky", "steady"]);
    assert_eq!(server.calls(), 7);
}

#[tokio::test(start_paused = true)]
async fn without_per_tool_every_tool_shares_the_server_breaker() {
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(Scripted::failing(network()));
    for tool in ["a", "b", "c", "d", "e"] {
        service.call(tool_call(tool)).await.unwrap_err();
    }
    assert_eq!(breakers.server_breaker().phase(), Open);
    assert!(breakers.tool_breaker("a").is_none());
    assert_eq!(
        service.call(tool_call("f")).await.unwrap_err().kind(),
        ErrorKind::CircuitOpen
    );
}

#[tokio::test(start_paused = true)]
async fn uncounted_errors_and_is_error_results_never_open_the_breaker() {
    let tool_error_result = Ok(Payload::Value(json!({"content": [], "isError": true})));
    let server = Scripted::new();
    for kind in [
        ErrorKind::InvalidParams,
        ErrorKind::ToolNotFound,
        ErrorKind::Auth,
        ErrorKind::PermissionDenied,
        ErrorKind::Resource,
        ErrorKind::Tool,
        ErrorKind::Protocol,
        ErrorKind::CircuitOpen,
        ErrorKind::RateLimited,
    ] {
        for _ in 0..5 {
            server.push(Err(err(kind, Delivery::Answered)));
        }
    }
    for _ in 0..5 {
        server.push(tool_error_result.clone());
    }
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server.clone());
    for _ in 0..(9 * 5 + 5) {
        let _ = service.call(tool_call("search")).await;
    }
    assert_eq!(server.calls(), 50, "every call went through");
    assert_eq!(breakers.server_breaker().phase(), Closed);
    assert_eq!(breakers.server_breaker().failures_in_window(), 0);
}

#[tokio::test(start_paused = true)]
async fn timeouts_and_server_unavailable_count_like_network_failures() {
    let server = Scripted::new();
    for kind in [
        ErrorKind::Timeout,
        ErrorKind::ServerUnavailable,
        ErrorKind::Timeout,
        ErrorKind::Network,
        ErrorKind::ServerUnavailable,
    ] {
        server.push(Err(err(kind, Delivery::Sent)));
    }
    let breakers = CircuitBreakerLayer::new(BreakerPolicy::default());
    let service = breakers.layer(server);
    fail_times(&service, &Operation::new("ping", None), 5).await;
    assert_eq!(breakers.server_breaker().phase(), Open);
}

#[tokio::test(start_paused = true)]
async fn failure_rule_can_be_overridden() {
    let policy = BreakerPolicy::default()
        .with_failure_threshold(2)
        .with_failure_rule(|e| e.kind() == ErrorKind::Tool);
    let breakers = CircuitBreakerLayer::new(policy);
    let network_server = breakers.layer(Scripted::failing(network()));
    fail_times(&network_server, &Operation::new("ping", None), 5).await;
    assert_eq!(
        breakers.server_breaker().phase(),
        Closed,
        "network no longer counts"
    );
    let tool_server = breakers.layer(Scripted::failing(err(ErrorKind::Tool, Delivery::Answered)));
    fail_times(&tool_server, &Operation::new("ping", None), 2).await;
    assert_eq!(breakers.server_breaker().phase(), Open);
}

#[tokio::test(start_paused = true)]
async fn an_answered_error_closes_a_half_open_breaker_but_a_never_sent_one_decides_nothing() {
    let breaker = CircuitBreaker::new("server", BreakerPolicy::default());
    for _ in 0..5 {
        breaker.try_acquire(None).unwrap().record_error(&network());
    }
    advance(Duration::from_secs(30)).await;
    breaker
        .try_acquire(None)
        .unwrap()
        .record_error(&err(ErrorKind::RateLimited, Delivery::NotSent));
    assert_eq!(breaker.phase(), HalfOpen);
    assert_eq!(breaker.snapshot().probes_in_flight, 0, "slot freed");
    breaker
        .try_acquire(None)
        .unwrap()
        .record_error(&err(ErrorKind::InvalidParams, Delivery::Answered));
    assert_eq!(breaker.phase(), Closed, "the server answered");
}

#[tokio::test(start_paused = true)]
async fn a_call_abandoned_at_its_deadline_counts_as_a_timeout() {
    let breaker = CircuitBreaker::new("server", BreakerPolicy::default());
    let deadline = Instant::now() + Duration::from_secs(5);
    let early = breaker.try_acquire(Some(deadline)).unwrap();
    drop(early); // the caller gave up before the deadline
    assert_eq!(breaker.failures_in_window(), 0);
    let late = breaker.try_acquire(Some(deadline)).unwrap();
    advance(Duration::from_secs(5)).await;
    drop(late);
    assert_eq!(breaker.failures_in_window(), 1);
}

#[tokio::test(start_paused = true)]
async fn outcomes_of_calls_started_before_a_transition_are_ignored() {
    let breaker = CircuitBreaker::new("server", BreakerPolicy::default());
    let from_closed = breaker.try_acquire(None).unwrap();
    for _ in 0..5 {
        breaker.try_acquire(None).unwrap().record_error(&network());
    }
    advance(Duration::from_secs(30)).await;
    // Two probes of the first half-open round: one fails and reopens the breaker.
    let slow_probe = breaker.try_acquire(None).unwrap();
    breaker.try_acquire(None).unwrap().record_error(&network());
    assert_eq!(breaker.phase(), Open);
    advance(Duration::from_secs(30)).await;
    assert_eq!(breaker.phase(), HalfOpen);
    // The first round's probe succeeding now does not close the second round.
    slow_probe.record_success();
    assert_eq!(breaker.phase(), HalfOpen);
    breaker.try_acquire(None).unwrap().record_success();
    assert_eq!(breaker.phase(), Closed);
    // A call from before the breaker first opened fails now: not counted in the new window.
    from_closed.record_error(&network());
    assert_eq!(breaker.failures_in_window(), 0);
}

#[test]
fn zero_threshold_and_probes_act_as_one() {
    let policy = BreakerPolicy::default()
        .with_failure_threshold(0)
        .with_half_open_probes(0);
    assert_eq!(policy.threshold(), 1);
    assert_eq!(policy.probes(), 1);
}

/// A closed breaker admits without its lock (`closed_generation`): every way back to closed —
/// a reset, a probe's success — re-arms it, so new failures count and open it again, while a
/// permit from an earlier closed phase stays stale.
#[tokio::test(start_paused = true)]
async fn failures_count_again_after_every_way_back_to_closed() {
    let breaker = CircuitBreaker::new("s", BreakerPolicy::default().with_failure_threshold(2));
    let first_closed = breaker.try_acquire(None).unwrap();
    for _ in 0..2 {
        breaker.try_acquire(None).unwrap().record_error(&network());
    }
    assert_eq!(breaker.phase(), Open);

    // Closed again by a reset: two new failures open it again; the old permit is ignored.
    breaker.reset();
    let after_reset = breaker.try_acquire(None).unwrap();
    let late_success = breaker.try_acquire(None).unwrap();
    first_closed.record_error(&network());
    assert_eq!(breaker.failures_in_window(), 0);
    breaker.try_acquire(None).unwrap().record_error(&network());
    assert_eq!(breaker.failures_in_window(), 1);
    breaker.try_acquire(None).unwrap().record_error(&network());
    assert_eq!(breaker.phase(), Open);

    // Half-open after the cool-down: a permit of the closed phase before neither reopens nor
    // closes it.
    advance(Duration::from_secs(30)).await;
    assert_eq!(breaker.phase(), HalfOpen);
    after_reset.record_error(&network());
    assert_eq!(breaker.phase(), HalfOpen);
    late_success.record_success();
    assert_eq!(breaker.phase(), HalfOpen);

    // Closed again by a probe's success: new failures count from zero and open it again.
    let probe = breaker.try_acquire(None).unwrap();
    assert!(probe.is_probe());
    probe.record_success();
    assert_eq!(breaker.phase(), Closed);
    let closed = breaker.try_acquire(None).unwrap();
    assert!(!closed.is_probe());
    closed.record_error(&network());
    assert_eq!(breaker.failures_in_window(), 1);
    breaker.try_acquire(None).unwrap().record_error(&network());
    assert_eq!(breaker.phase(), Open);
    assert_eq!(breaker.times_opened(), 3);

    // A probe of an earlier half-open phase, reported in a later one, decides nothing.
    advance(Duration::from_secs(30)).await;
    let old_probe = breaker.try_acquire(None).unwrap();
    assert!(old_probe.is_probe());
    breaker.reset();
    for _ in 0..2 {
        breaker.try_acquire(None).unwrap().record_error(&network());
    }
    advance(Duration::from_secs(30)).await;
    assert_eq!(breaker.phase(), HalfOpen);
    old_probe.record_error(&network());
    assert_eq!(breaker.phase(), HalfOpen);
}
