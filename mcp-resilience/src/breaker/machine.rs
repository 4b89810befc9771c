//! One circuit breaker: the state machine behind its mutex (phases, the failure window, the
//! history of transitions) and the permit a call reports its outcome to.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcp_core::Error;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    BreakerPhase, BreakerPolicy, BreakerRejection, BreakerSnapshot, BreakerState, BreakerTransition,
};
use crate::{instant_after, whole_seconds_up};

/// How many of its latest phase changes a breaker keeps for [`CircuitBreaker::transitions`]
/// (the count of all of them is kept separately).
const MAX_TRANSITIONS_KEPT: usize = 64;

/// [`CircuitBreaker::closed_generation`] while the breaker is not closed.
const NOT_CLOSED: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
enum PhaseDetail {
    Closed,
    Open { until: Instant },
    HalfOpen { probes_in_flight: u32 },
}

impl PhaseDetail {
    fn public(self) -> BreakerPhase {
        match self {
            PhaseDetail::Closed => BreakerPhase::Closed,
            PhaseDetail::Open { .. } => BreakerPhase::Open,
            PhaseDetail::HalfOpen { .. } => BreakerPhase::HalfOpen,
        }
    }
}

#[derive(Debug)]
struct Machine {
    phase: PhaseDetail,
    /// Failure instants within the window, oldest first (closed only).
    failures: VecDeque<Instant>,
    /// Bumped at every transition: an outcome reported for a permit of an older generation
    /// (a call that started before the breaker changed phase) is stale and ignored.
    generation: u64,
    times_opened: u64,
    transition_count: u64,
    history: VecDeque<BreakerTransition>,
}

/// How a finished call bears on the server's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallOutcome {
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
    /// The machine's generation while it is closed, [`NOT_CLOSED`] otherwise: a closed breaker
    /// admits a call without its lock or the clock (a permit of a generation that ended
    /// meanwhile is ignored when it settles, as any permit that outlived a change of phase).
    closed_generation: AtomicU64,
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
                phase: PhaseDetail::Closed,
                failures: VecDeque::new(),
                generation: 0,
                times_opened: 0,
                transition_count: 0,
                history: VecDeque::new(),
            }),
            closed_generation: AtomicU64::new(0),
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
    pub fn transitions(&self) -> Vec<BreakerTransition> {
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
                PhaseDetail::HalfOpen { probes_in_flight } => probes_in_flight,
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
    /// session to the endpoint. When it was not closed, outcomes of calls that started before
    /// are ignored, as after any change of phase.
    pub fn reset(&self) {
        let now = Instant::now();
        let mut machine = self.machine(now);
        machine.failures.clear();
        if !matches!(machine.phase, PhaseDetail::Closed) {
            self.transition(&mut machine, PhaseDetail::Closed, now);
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
        let admitted = self.admission()?;
        Ok(BreakerPermit::new(
            BreakerRef::Borrowed(self),
            admitted,
            deadline,
        ))
    }

    /// [`try_acquire`](Self::try_acquire), the permit holding its own handle to the breaker
    /// (for a future that keeps it across its awaits beside the call it guards).
    pub fn try_acquire_owned(
        self: &Arc<Self>,
        deadline: Option<Instant>,
    ) -> Result<BreakerPermit<'static>, BreakerRejection> {
        Arc::clone(self)
            .acquire_into(deadline)
            .map_err(|(_, rejection)| rejection)
    }

    /// [`try_acquire_owned`](Self::try_acquire_owned) with the handle given, not cloned: the
    /// refusal hands it back.
    pub(super) fn acquire_into(
        self: Arc<Self>,
        deadline: Option<Instant>,
    ) -> Result<BreakerPermit<'static>, (Arc<Self>, BreakerRejection)> {
        match self.admission() {
            Ok(admitted) => Ok(BreakerPermit::new(
                BreakerRef::Owned(self),
                admitted,
                deadline,
            )),
            Err(rejection) => Err((self, rejection)),
        }
    }

    /// Whether a call may be made now: the generation its permit belongs to and whether it is a
    /// half-open probe, or the refusal.
    fn admission(&self) -> Result<(u64, bool), BreakerRejection> {
        let generation = self.closed_generation.load(Ordering::Acquire);
        if generation != NOT_CLOSED {
            return Ok((generation, false));
        }
        let now = Instant::now();
        let mut machine = self.machine(now);
        let probes = self.policy.probes();
        let probe = match &mut machine.phase {
            PhaseDetail::Closed => false,
            PhaseDetail::Open { until } => {
                return Err(BreakerRejection {
                    phase: BreakerPhase::Open,
                    retry_after: whole_seconds_up(until.saturating_duration_since(now)),
                })
            }
            PhaseDetail::HalfOpen { probes_in_flight } if *probes_in_flight < probes => {
                *probes_in_flight += 1;
                true
            }
            PhaseDetail::HalfOpen { .. } => {
                return Err(BreakerRejection {
                    phase: BreakerPhase::HalfOpen,
                    retry_after: Duration::from_secs(1),
                })
            }
        };
        Ok((machine.generation, probe))
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
        if let PhaseDetail::Open { until } = machine.phase {
            if now >= until {
                self.transition(
                    &mut machine,
                    PhaseDetail::HalfOpen {
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
            PhaseDetail::Closed => BreakerState::Closed,
            PhaseDetail::Open { until } => BreakerState::Open {
                remaining: until.saturating_duration_since(now),
            },
            PhaseDetail::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    fn transition(&self, machine: &mut Machine, to: PhaseDetail, at: Instant) {
        let from = machine.phase.public();
        machine.phase = to;
        machine.generation += 1;
        let closed_generation = match to {
            PhaseDetail::Closed => machine.generation,
            PhaseDetail::Open { .. } | PhaseDetail::HalfOpen { .. } => NOT_CLOSED,
        };
        self.closed_generation
            .store(closed_generation, Ordering::Release);
        machine.transition_count += 1;
        if machine.history.len() == MAX_TRANSITIONS_KEPT {
            machine.history.pop_front();
        }
        let to = to.public();
        machine
            .history
            .push_back(BreakerTransition { from, to, at });
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
        self.transition(machine, PhaseDetail::Open { until }, now);
    }

    fn classify(&self, error: &Error) -> CallOutcome {
        if (self.policy.counts_as_failure)(error) {
            CallOutcome::Failure
        } else if error.was_never_sent() {
            CallOutcome::Neutral
        } else {
            CallOutcome::Success
        }
    }

    fn settle(&self, generation: u64, probe: bool, outcome: CallOutcome) {
        // Only a probe's outcome or a failure can change anything (a closed breaker's success
        // leaves it as it is): the rest take no lock.
        if !probe && outcome != CallOutcome::Failure {
            return;
        }
        let now = Instant::now();
        let mut machine = self.machine(now);
        if machine.generation != generation {
            // The breaker changed phase while this call ran: its outcome is old news.
            return;
        }
        match (machine.phase, probe, outcome) {
            (PhaseDetail::Closed, false, CallOutcome::Failure) => {
                machine.failures.push_back(now);
                // Never more than `threshold` entries: reaching it opens (and clears) them.
                if machine.failures.len() >= self.policy.threshold() {
                    self.open(&mut machine, now);
                }
            }
            (PhaseDetail::HalfOpen { .. }, true, CallOutcome::Failure) => {
                self.open(&mut machine, now)
            }
            (PhaseDetail::HalfOpen { .. }, true, CallOutcome::Success) => {
                machine.failures.clear();
                self.transition(&mut machine, PhaseDetail::Closed, now);
            }
            (PhaseDetail::HalfOpen { probes_in_flight }, true, CallOutcome::Neutral) => {
                machine.phase = PhaseDetail::HalfOpen {
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
    breaker: BreakerRef<'a>,
    generation: u64,
    probe: bool,
    deadline: Option<Instant>,
    settled: bool,
}

/// How a permit holds its breaker: borrowed ([`CircuitBreaker::try_acquire`]) or owned
/// ([`CircuitBreaker::try_acquire_owned`]).
enum BreakerRef<'a> {
    Borrowed(&'a CircuitBreaker),
    Owned(Arc<CircuitBreaker>),
}

impl std::ops::Deref for BreakerRef<'_> {
    type Target = CircuitBreaker;

    fn deref(&self) -> &CircuitBreaker {
        match self {
            BreakerRef::Borrowed(breaker) => breaker,
            BreakerRef::Owned(breaker) => breaker,
        }
    }
}

impl fmt::Debug for BreakerPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerPermit")
            .field("breaker", &self.breaker.label)
            .field("probe", &self.probe)
            .finish()
    }
}

impl<'a> BreakerPermit<'a> {
    /// A permit of `breaker` for an admitted call: its generation and whether it is a probe
    /// ([`CircuitBreaker::admission`]).
    fn new(
        breaker: BreakerRef<'a>,
        (generation, probe): (u64, bool),
        deadline: Option<Instant>,
    ) -> Self {
        BreakerPermit {
            breaker,
            generation,
            probe,
            deadline,
            settled: false,
        }
    }

    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// The call succeeded (a tool's `isError` result included).
    pub fn record_success(mut self) {
        self.settled = true;
        self.breaker
            .settle(self.generation, self.probe, CallOutcome::Success);
    }

    /// The call failed with `error`; the breaker's [`FailureRule`](super::FailureRule) decides whether it counts.
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
            CallOutcome::Neutral
        };
        self.breaker.settle(self.generation, self.probe, outcome);
    }
}
