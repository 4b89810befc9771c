//! The circuit breaker: stops calling a server (or one of its tools) that keeps failing, so the
//! agent learns at once that the tool is down instead of waiting for timeouts, and the server
//! gets time to recover.
//!
//! ```text
//!            5 failures within 60 s                 30 s later
//!   CLOSED ─────────────────────────▶ OPEN ─────────────────────────▶ HALF-OPEN
//!     ▲                                ▲   (calls fail at once with     │ up to 3 probe
//!     │                                │    CircuitOpen, nothing sent)  │ calls at a time
//!     │                                └────────── a probe fails ───────┤
//!     └──────────────────────────────────────────── a probe succeeds ───┘
//! ```
//!
//! What counts as a failure is a [`FailureRule`] (default: [`counts_as_failure_by_default`];
//! see the crate docs, "What counts as a failure"). Successes do not reset the failure window
//! while the breaker is closed; only time forgets a failure.
//!
//! A [`CircuitBreaker`] is one state machine behind a short `std` mutex (never held across an
//! await). It has no timer task: the move from OPEN to HALF-OPEN is made when the breaker is
//! next consulted (a call, [`state`](CircuitBreaker::state), …) and is recorded at the instant
//! the cool-down ended. [`CircuitBreakerLayer`] holds the server's breaker and, when the policy
//! says [`per_tool`](BreakerPolicy::per_tool), one breaker per tool; the layer is a cheap
//! handle the facade keeps a clone of to show the breakers' state.

// `policy.rs` the configuration and the failure rule; `machine.rs` one breaker's state machine
// and its permits; `status.rs` what a breaker reports; `layer.rs` the breakers as a layer.
mod layer;
mod machine;
mod policy;
mod status;

pub use layer::{CircuitBreakerLayer, CircuitBreakerService, GuardedCall};
pub use machine::{BreakerPermit, CircuitBreaker};
pub use policy::{counts_as_failure_by_default, BreakerPolicy, FailureRule};
pub use status::{
    BreakerPhase, BreakerRejection, BreakerSnapshot, BreakerState, BreakerTransition,
};

#[cfg(test)]
mod tests;
