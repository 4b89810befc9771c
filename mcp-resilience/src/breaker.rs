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

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use mcp_core::{Delivery, Error, ErrorKind, Layer, McpService, Operation, Payload};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::{instant_after, whole_seconds_up};

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

/// How many of its latest phase changes a breaker keeps for [`CircuitBreaker::transitions`]
/// (the count of all of them is kept separately).
const MAX_TRANSITIONS_KEPT: usize = 64;

/// How many per-tool breakers one layer creates; tools seen after that share the server's
/// breaker (tool names come from callers, so the map must not grow without bound).
const MAX_TOOL_BREAKERS: usize = 1024;

/// When a [`CircuitBreaker`] opens and how it recovers.
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

    fn threshold(&self) -> usize {
        usize::try_from(self.failure_threshold.max(1)).unwrap_or(usize::MAX)
    }

    fn probes(&self) -> u32 {
        self.half_open_probes.max(1)
    }
}

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
pub struct Transition {
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
                breaker.policy.probes()
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

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen { probes_in_flight: u32 },
}

impl Phase {
    fn public(self) -> BreakerPhase {
        match self {
            Phase::Closed => BreakerPhase::Closed,
            Phase::Open { .. } => BreakerPhase::Open,
            Phase::HalfOpen { .. } => BreakerPhase::HalfOpen,
        }
    }
}

#[derive(Debug)]
struct Machine {
    phase: Phase,
    /// Failure instants within the window, oldest first (closed only).
    failures: VecDeque<Instant>,
    /// Bumped at every transition: an outcome reported for a permit of an older generation
    /// (a call that started before the breaker changed phase) is stale and ignored.
    generation: u64,
    times_opened: u64,
    transition_count: u64,
    history: VecDeque<Transition>,
}

/// How a finished call bears on the server's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The server answered.
    Success,
    /// The rule counts it.
    Failure,
    /// Says nothing about the server: a non-failure that never reached it, or a call the
    /// caller abandoned before its deadline.
    Neutral,
}

/// One circuit breaker: a shared handle (use it behind an `Arc`) whose state can be read at
/// any time.
pub struct CircuitBreaker {
    label: String,
    policy: BreakerPolicy,
    machine: Mutex<Machine>,
    phases: watch::Sender<BreakerPhase>,
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("label", &self.label)
            .field("state", &self.state())
            .finish()
    }
}

impl CircuitBreaker {
    /// A closed breaker; `label` names what it guards (a server or a tool) in logs and error
    /// messages.
    pub fn new(label: impl Into<String>, policy: BreakerPolicy) -> Self {
        CircuitBreaker {
            label: label.into(),
            policy,
            machine: Mutex::new(Machine {
                phase: Phase::Closed,
                failures: VecDeque::new(),
                generation: 0,
                times_opened: 0,
                transition_count: 0,
                history: VecDeque::new(),
            }),
            phases: watch::channel(BreakerPhase::Closed).0,
        }
    }

    /// What the breaker guards.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The policy.
    pub fn policy(&self) -> &BreakerPolicy {
        &self.policy
    }

    /// The state now.
    pub fn state(&self) -> BreakerState {
        let now = Instant::now();
        let machine = self.machine(now);
        self.state_locked(&machine, now)
    }

    /// The phase now.
    pub fn phase(&self) -> BreakerPhase {
        self.state().phase()
    }

    /// Failures counted within the window now.
    pub fn failures_in_window(&self) -> usize {
        self.snapshot().failures_in_window
    }

    /// How often the breaker has opened.
    pub fn times_opened(&self) -> u64 {
        self.snapshot().times_opened
    }

    /// How many phase changes there have been.
    pub fn transition_count(&self) -> u64 {
        self.snapshot().transitions
    }

    /// The latest phase changes (up to 64), oldest first.
    pub fn transitions(&self) -> Vec<Transition> {
        let now = Instant::now();
        self.machine(now).history.iter().copied().collect()
    }

    /// Everything about the breaker, read at one moment.
    pub fn snapshot(&self) -> BreakerSnapshot {
        let now = Instant::now();
        let machine = self.machine(now);
        let state = self.state_locked(&machine, now);
        BreakerSnapshot {
            state,
            failures_in_window: machine.failures.len(),
            times_opened: machine.times_opened,
            transitions: machine.transition_count,
            probes_in_flight: match machine.phase {
                Phase::HalfOpen { probes_in_flight } => probes_in_flight,
                _ => 0,
            },
        }
    }

    /// Every phase change as it happens (OPEN → HALF-OPEN when the breaker notices the end of
    /// the cool-down: at the next call or read of its state).
    pub fn subscribe(&self) -> watch::Receiver<BreakerPhase> {
        self.phases.subscribe()
    }

    /// Closes the breaker at once (when it is not closed already), forgetting its failures:
    /// what it guards was seen healthy by other means — the facade's router opened a new
    /// session to the endpoint. Outcomes of calls that started before are ignored, as after
    /// any change of phase.
    pub fn reset(&self) {
        let now = Instant::now();
        let mut machine = self.machine(now);
        machine.failures.clear();
        if !matches!(machine.phase, Phase::Closed) {
            self.transition(&mut machine, Phase::Closed, now);
        }
    }

    /// Asks to make one call. `Ok` gives a permit to report the call's outcome to
    /// ([`BreakerPermit::record_success`], [`BreakerPermit::record_error`]); `Err` says the
    /// breaker refuses (open, or half-open with every probe slot taken).
    ///
    /// `deadline` is the call's deadline: a permit dropped without an outcome after it (the
    /// call ran out of time and was abandoned) counts as a timeout; one dropped before it (the
    /// caller gave up) counts as nothing.
    pub fn try_acquire(
        &self,
        deadline: Option<Instant>,
    ) -> Result<BreakerPermit<'_>, BreakerRejection> {
        let now = Instant::now();
        let mut machine = self.machine(now);
        let probes = self.policy.probes();
        let probe = match &mut machine.phase {
            Phase::Closed => false,
            Phase::Open { until } => {
                return Err(BreakerRejection {
                    phase: BreakerPhase::Open,
                    retry_after: whole_seconds_up(until.saturating_duration_since(now)),
                })
            }
            Phase::HalfOpen { probes_in_flight } if *probes_in_flight < probes => {
                *probes_in_flight += 1;
                true
            }
            Phase::HalfOpen { .. } => {
                return Err(BreakerRejection {
                    phase: BreakerPhase::HalfOpen,
                    retry_after: Duration::from_secs(1),
                })
            }
        };
        Ok(BreakerPermit {
            breaker: self,
            generation: machine.generation,
            probe,
            deadline,
            settled: false,
        })
    }

    /// Locks the machine and brings it up to `now`: ends a finished cool-down, forgets failures
    /// older than the window. The lock is only ever held for these few steps.
    fn machine(&self, now: Instant) -> MutexGuard<'_, Machine> {
        // A panic elsewhere while holding the lock cannot leave the machine half-updated in a
        // way that matters (every step is a single assignment), so a poisoned lock is used.
        let mut machine = self
            .machine
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Phase::Open { until } = machine.phase {
            if now >= until {
                self.transition(
                    &mut machine,
                    Phase::HalfOpen {
                        probes_in_flight: 0,
                    },
                    until,
                );
            }
        }
        let window = self.policy.window;
        while machine
            .failures
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= window)
        {
            machine.failures.pop_front();
        }
        machine
    }

    fn state_locked(&self, machine: &Machine, now: Instant) -> BreakerState {
        match machine.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { until } => BreakerState::Open {
                remaining: until.saturating_duration_since(now),
            },
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    fn transition(&self, machine: &mut Machine, to: Phase, at: Instant) {
        let from = machine.phase.public();
        machine.phase = to;
        machine.generation += 1;
        machine.transition_count += 1;
        if machine.history.len() == MAX_TRANSITIONS_KEPT {
            machine.history.pop_front();
        }
        let to = to.public();
        machine.history.push_back(Transition { from, to, at });
        self.phases.send_replace(to);
        match to {
            BreakerPhase::Open => {
                machine.times_opened += 1;
                tracing::warn!(breaker = %self.label, %from, "circuit breaker opened");
            }
            BreakerPhase::HalfOpen => {
                tracing::info!(breaker = %self.label, "circuit breaker half-open: probing")
            }
            BreakerPhase::Closed => tracing::info!(breaker = %self.label, "circuit breaker closed"),
        }
    }

    fn open(&self, machine: &mut Machine, now: Instant) {
        machine.failures.clear();
        let until = instant_after(now, self.policy.open_for)
            // An absurd cool-down: stay open as long as can be represented.
            .or_else(|| instant_after(now, Duration::from_secs(u64::from(u32::MAX))))
            .unwrap_or(now);
        self.transition(machine, Phase::Open { until }, now);
    }

    fn classify(&self, error: &Error) -> Outcome {
        if (self.policy.counts_as_failure)(error) {
            Outcome::Failure
        } else if error.was_never_sent() {
            Outcome::Neutral
        } else {
            Outcome::Success
        }
    }

    fn settle(&self, generation: u64, probe: bool, outcome: Outcome) {
        let now = Instant::now();
        let mut machine = self.machine(now);
        if machine.generation != generation {
            // The breaker changed phase while this call ran: its outcome is old news.
            return;
        }
        match (machine.phase, probe, outcome) {
            (Phase::Closed, false, Outcome::Failure) => {
                machine.failures.push_back(now);
                // Never more than `threshold` entries: reaching it opens (and clears) them.
                if machine.failures.len() >= self.policy.threshold() {
                    self.open(&mut machine, now);
                }
            }
            (Phase::HalfOpen { .. }, true, Outcome::Failure) => self.open(&mut machine, now),
            (Phase::HalfOpen { .. }, true, Outcome::Success) => {
                machine.failures.clear();
                self.transition(&mut machine, Phase::Closed, now);
            }
            (Phase::HalfOpen { probes_in_flight }, true, Outcome::Neutral) => {
                machine.phase = Phase::HalfOpen {
                    probes_in_flight: probes_in_flight.saturating_sub(1),
                };
            }
            _ => {}
        }
    }
}

/// Permission to make one call through a [`CircuitBreaker`]; report the outcome with
/// [`record_success`](Self::record_success) or [`record_error`](Self::record_error). Dropped
/// without either, the call counts as a timeout when its deadline has passed and as nothing
/// otherwise (a probe's slot is freed either way).
#[must_use = "report the call's outcome to the breaker"]
pub struct BreakerPermit<'a> {
    breaker: &'a CircuitBreaker,
    generation: u64,
    probe: bool,
    deadline: Option<Instant>,
    settled: bool,
}

impl fmt::Debug for BreakerPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerPermit")
            .field("breaker", &self.breaker.label)
            .field("probe", &self.probe)
            .finish()
    }
}

impl BreakerPermit<'_> {
    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// The call succeeded (a tool's `isError` result included).
    pub fn record_success(mut self) {
        self.settled = true;
        self.breaker
            .settle(self.generation, self.probe, Outcome::Success);
    }

    /// The call failed with `error`; the breaker's [`FailureRule`] decides whether it counts.
    /// An error that does not count is taken as the server having answered — unless it never
    /// reached the server, which proves nothing either way.
    pub fn record_error(mut self, error: &Error) {
        self.settled = true;
        let outcome = self.breaker.classify(error);
        self.breaker.settle(self.generation, self.probe, outcome);
    }

    /// Reports a result.
    pub fn record<T>(self, result: &Result<T, Error>) {
        match result {
            Ok(_) => self.record_success(),
            Err(error) => self.record_error(error),
        }
    }
}

impl Drop for BreakerPermit<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let expired = self.deadline.is_some_and(|d| Instant::now() >= d);
        let outcome = if expired {
            // The call was abandoned at its deadline (an outer timeout fired): a timeout, as
            // far as the rule is concerned.
            self.breaker
                .classify(&Error::timeout("the call was abandoned at its deadline"))
        } else {
            Outcome::Neutral
        };
        self.breaker.settle(self.generation, self.probe, outcome);
    }
}

struct Registry {
    policy: BreakerPolicy,
    server: Arc<CircuitBreaker>,
    /// Present when the policy is per tool.
    tools: Option<Mutex<HashMap<String, Arc<CircuitBreaker>>>>,
}

impl Registry {
    fn breaker_for(&self, operation: &Operation) -> Arc<CircuitBreaker> {
        let (Some(tools), Some(tool)) = (&self.tools, operation.tool_name()) else {
            return self.server.clone();
        };
        let mut tools = tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(breaker) = tools.get(tool) {
            return breaker.clone();
        }
        if tools.len() >= MAX_TOOL_BREAKERS {
            return self.server.clone();
        }
        let breaker = Arc::new(CircuitBreaker::new(tool, self.policy.clone()));
        tools.insert(tool.to_owned(), breaker.clone());
        breaker
    }
}

/// Wraps a service in circuit breakers: one for the server, and one per tool when the policy
/// says [`per_tool`](BreakerPolicy::per_tool).
///
/// The layer *is* the breakers' handle: clones share them, and every service it wraps (one
/// server's sessions) uses the same breakers. Keep a clone to read their state.
#[derive(Clone)]
pub struct CircuitBreakerLayer {
    registry: Arc<Registry>,
}

impl fmt::Debug for CircuitBreakerLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("server", &self.registry.server)
            .field("per_tool", &self.registry.tools.is_some())
            .finish()
    }
}

impl CircuitBreakerLayer {
    /// Breakers by `policy`, the server's labelled "server".
    pub fn new(policy: BreakerPolicy) -> Self {
        CircuitBreakerLayer::for_server("server", policy)
    }

    /// Breakers by `policy` for the server named `server` (used in logs and error messages).
    pub fn for_server(server: impl Into<String>, policy: BreakerPolicy) -> Self {
        let tools = policy.per_tool.then(|| Mutex::new(HashMap::new()));
        CircuitBreakerLayer {
            registry: Arc::new(Registry {
                server: Arc::new(CircuitBreaker::new(server, policy.clone())),
                policy,
                tools,
            }),
        }
    }

    /// The server's breaker (every operation, or every one but `tools/call` when per tool).
    pub fn server_breaker(&self) -> &Arc<CircuitBreaker> {
        &self.registry.server
    }

    /// The breaker of `tool`, once a call of it has been made (per-tool policies only).
    pub fn tool_breaker(&self, tool: &str) -> Option<Arc<CircuitBreaker>> {
        let tools = self.registry.tools.as_ref()?;
        let tools = tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        tools.get(tool).cloned()
    }

    /// Every per-tool breaker, by tool name.
    pub fn tool_breakers(&self) -> Vec<(String, Arc<CircuitBreaker>)> {
        let Some(tools) = &self.registry.tools else {
            return Vec::new();
        };
        let tools = tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut all: Vec<_> = tools
            .iter()
            .map(|(name, breaker)| (name.clone(), breaker.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The breaker `operation` goes through.
    pub fn breaker_for(&self, operation: &Operation) -> Arc<CircuitBreaker> {
        self.registry.breaker_for(operation)
    }
}

impl<S> Layer<S> for CircuitBreakerLayer {
    type Service = CircuitBreakerService<S>;

    fn layer(&self, inner: S) -> CircuitBreakerService<S> {
        CircuitBreakerService {
            inner,
            breakers: self.clone(),
        }
    }
}

/// A service behind circuit breakers (see [`CircuitBreakerLayer`]).
#[derive(Debug, Clone)]
pub struct CircuitBreakerService<S> {
    inner: S,
    breakers: CircuitBreakerLayer,
}

impl<S> CircuitBreakerService<S> {
    /// The breakers.
    pub fn breakers(&self) -> &CircuitBreakerLayer {
        &self.breakers
    }

    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

#[async_trait]
impl<S: McpService> McpService for CircuitBreakerService<S> {
    async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        let breaker = self.breakers.breaker_for(&operation);
        let permit = match breaker.try_acquire(operation.options.deadline) {
            Ok(permit) => permit,
            Err(rejection) => return Err(rejection.to_error(&breaker, &operation)),
        };
        let result = self.inner.call(operation).await;
        permit.record(&result);
        result
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_core::{Delivery, ErrorKind, Layer, McpService, Operation, Payload};
    use serde_json::json;
    use tokio::time::{advance, Instant};

    use super::*;
    use crate::test_support::{err, ok, tool_call, Scripted, Step};

    fn network() -> Error {
        err(ErrorKind::Network, Delivery::Sent)
    }

    fn transition(from: BreakerPhase, to: BreakerPhase, at: Instant) -> Transition {
        Transition { from, to, at }
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
        let tool_server =
            breakers.layer(Scripted::failing(err(ErrorKind::Tool, Delivery::Answered)));
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
}
