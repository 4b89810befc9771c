//! What a breaker reports: its phase and state, its phase changes, a snapshot for status
//! displays, and why it refused a call ([`BreakerRejection`], the error a refused call fails with).

use std::fmt;
use std::time::Duration;

use mcp_core::{Delivery, Error, ErrorKind, Operation};
use tokio::time::Instant;

use super::CircuitBreaker;

/// Which of its three states a breaker is in, without detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerPhase {
    /// Calls go through; failures are counted.
    Closed,
    /// Calls fail at once.
    Open,
    /// A few probe calls go through to test the server.
    HalfOpen,
}

impl BreakerPhase {
    /// A stable snake_case name, for status displays and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            BreakerPhase::Closed => "closed",
            BreakerPhase::Open => "open",
            BreakerPhase::HalfOpen => "half_open",
        }
    }
}

impl fmt::Display for BreakerPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A breaker's state as of now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls fail at once for `remaining` more.
    Open {
        /// Time left until the breaker half-opens.
        remaining: Duration,
    },
    /// Probe calls go through.
    HalfOpen,
}

impl BreakerState {
    /// The phase, without the time left.
    pub fn phase(&self) -> BreakerPhase {
        match self {
            BreakerState::Closed => BreakerPhase::Closed,
            BreakerState::Open { .. } => BreakerPhase::Open,
            BreakerState::HalfOpen => BreakerPhase::HalfOpen,
        }
    }
}

/// One change of phase, and when it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerTransition {
    /// The phase left.
    pub from: BreakerPhase,
    /// The phase entered.
    pub to: BreakerPhase,
    /// When: the failure or probe outcome that caused it, or the end of the cool-down for
    /// OPEN → HALF-OPEN (even when the breaker noticed later).
    pub at: Instant,
}

/// Everything a status display shows about a breaker, read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerSnapshot {
    /// The state.
    pub state: BreakerState,
    /// Failures counted within the window (closed only; cleared on opening and closing).
    pub failures_in_window: usize,
    /// How often the breaker has opened (reopening after a failed probe included).
    pub times_opened: u64,
    /// How many phase changes there have been.
    pub transitions: u64,
    /// Probe calls in flight (half-open only).
    pub probes_in_flight: u32,
}

/// Why a breaker refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerRejection {
    /// The phase that refused: [`Open`](BreakerPhase::Open), or
    /// [`HalfOpen`](BreakerPhase::HalfOpen) with every probe slot taken.
    pub phase: BreakerPhase,
    /// When to try again: the cool-down left (rounded up to whole seconds, at least 1 s).
    pub retry_after: Duration,
}

impl BreakerRejection {
    /// The [`ErrorKind::CircuitOpen`] error the layer fails the call with: `retry_after` set,
    /// named after the operation's subject, never sent.
    pub fn to_error(&self, breaker: &CircuitBreaker, operation: &Operation) -> Error {
        let message = match self.phase {
            BreakerPhase::HalfOpen => format!(
                "circuit breaker for {} is half-open and all {} probe calls are in flight",
                breaker.label(),
                breaker.policy().probes()
            ),
            _ => format!(
                "circuit breaker for {} is open after repeated failures; next probe in {}s",
                breaker.label(),
                self.retry_after.as_secs()
            ),
        };
        operation.attach_subject(
            Error::new(ErrorKind::CircuitOpen, message)
                .with_retry_after(self.retry_after)
                .with_delivery(Delivery::NotSent),
        )
    }
}
