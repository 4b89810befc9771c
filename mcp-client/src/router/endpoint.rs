//! One endpoint of a routed server: how to open sessions to it, its breaker and (lazily) its
//! pool, what is known of its health, and the calls in flight on it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_resilience::{BreakerPhase, CircuitBreakerLayer};
use tokio::time::Instant;

use super::choice::RouteCandidate;
use super::failover::EndpointRef;
use crate::config::ServerConfig;
use crate::connect::ServerConnector;
use crate::status::{BreakerStatus, EndpointReport, EndpointState};

/// What is known of an endpoint's health.
#[derive(Debug, Clone)]
enum Health {
    /// Nothing yet: never connected to or probed.
    Unknown,
    /// It answered (a session opened, a probe or call succeeded), continuously since `since`;
    /// `recovered` when it had failed before (then it settles after the failback period).
    Up { since: Instant, recovered: bool },
    /// It failed: it did not answer (a connect, a probe, a call that never reached it), or
    /// its breaker opened (`breaker`).
    Down { why: String, breaker: bool },
}

/// One endpoint of a routed server.
pub(crate) struct Endpoint {
    pub(crate) index: usize,
    /// Its URL without user info, query or fragment (what events and displays show).
    pub(crate) url: String,
    pub(crate) region: Option<String>,
    /// In the client's region (every endpoint is when the client has none).
    pub(crate) local: bool,
    /// The endpoint's own entry: the server's, with its URL and headers.
    pub(crate) config: ServerConfig,
    pub(crate) connector: Arc<ServerConnector>,
    /// Its breakers (the server's policy; per tool where configured), when the profile has them.
    pub(crate) breakers: Option<CircuitBreakerLayer>,
    /// Where its calls and probes are measured (the router reads its probe latency there).
    pub(crate) metrics: mcp_metrics::EndpointHandle,
    health: Mutex<Health>,
    /// `Health::Down`, readable on the call path without the lock.
    down: AtomicBool,
    /// Calls through the facade on this endpoint now (its sessions are closed after them).
    in_flight: Arc<AtomicUsize>,
    /// The latest deadline of the calls sent here, in nanoseconds since the router's epoch
    /// (0: none yet): a session being left stays open until then at most.
    latest_deadline: Arc<AtomicU64>,
    #[cfg(feature = "pool")]
    pool: Mutex<Option<mcp_pool::SessionPool>>,
    /// Whether calls on legacy-era sessions of this endpoint go through a pool.
    #[cfg(feature = "pool")]
    pub(crate) pooled: bool,
}

/// The parts an endpoint is made of.
pub(crate) struct EndpointParts {
    pub(crate) index: usize,
    /// Its URL as shown (without user info, query or fragment; unique within the server).
    pub(crate) url: String,
    pub(crate) region: Option<String>,
    pub(crate) local: bool,
    pub(crate) config: ServerConfig,
    pub(crate) connector: Arc<ServerConnector>,
    pub(crate) breakers: Option<CircuitBreakerLayer>,
    pub(crate) metrics: mcp_metrics::EndpointHandle,
    #[cfg(feature = "pool")]
    pub(crate) pooled: bool,
}

impl Endpoint {
    pub(crate) fn new(parts: EndpointParts) -> Endpoint {
        Endpoint {
            index: parts.index,
            url: parts.url,
            region: parts.region,
            local: parts.local,
            config: parts.config,
            connector: parts.connector,
            breakers: parts.breakers,
            metrics: parts.metrics,
            health: Mutex::new(Health::Unknown),
            down: AtomicBool::new(false),
            in_flight: Arc::new(AtomicUsize::new(0)),
            latest_deadline: Arc::new(AtomicU64::new(0)),
            #[cfg(feature = "pool")]
            pool: Mutex::new(None),
            #[cfg(feature = "pool")]
            pooled: parts.pooled,
        }
    }

    /// How events name it.
    pub(crate) fn reference(&self) -> EndpointRef {
        EndpointRef {
            index: self.index,
            url: self.url.clone(),
            region: self.region.clone(),
        }
    }

    /// It answered: up from now on, if it was not already.
    pub(crate) fn answered(&self, now: Instant) {
        let mut health = lock(&self.health);
        let recovered = match &*health {
            Health::Up { .. } => return,
            Health::Unknown => false,
            Health::Down { .. } => true,
        };
        *health = Health::Up {
            since: now,
            recovered,
        };
        self.down.store(false, Ordering::Release);
    }

    /// A session opened on it: it answered, and its breaker (if open or half-open) closes —
    /// a new session is a better probe than the breaker's own.
    pub(crate) fn connected(&self, now: Instant) {
        self.answered(now);
        if let Some(breakers) = &self.breakers {
            breakers.server_breaker().reset();
        }
    }

    /// It did not answer: down until it does. Whether it was not down already.
    pub(crate) fn failed(&self, why: &str) -> bool {
        self.went_down(why, false)
    }

    /// Its breaker opened: down until it answers again (and its breaker lets calls through).
    /// Whether it was not down already. Not answering stays the reason of an endpoint down
    /// for both.
    pub(crate) fn breaker_opened(&self) -> bool {
        self.went_down("its circuit breaker opened", true)
    }

    fn went_down(&self, why: &str, breaker: bool) -> bool {
        let mut health = lock(&self.health);
        let was_down = match &*health {
            Health::Down { breaker: false, .. } if breaker => return false,
            Health::Down { .. } => true,
            _ => false,
        };
        *health = Health::Down {
            why: why.to_owned(),
            breaker,
        };
        self.down.store(true, Ordering::Release);
        !was_down
    }

    /// Down because it did not answer (not only because its breaker opened).
    pub(crate) fn unreachable(&self) -> bool {
        matches!(&*lock(&self.health), Health::Down { breaker: false, .. })
    }

    /// Known to be down (one atomic load: the call path reads it).
    #[inline]
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// Why it is down, if it is.
    pub(crate) fn down_reason(&self) -> Option<String> {
        match &*lock(&self.health) {
            Health::Down { why, .. } => Some(why.clone()),
            _ => None,
        }
    }

    /// Whether its server breaker is open now (a half-open breaker lets probe calls through).
    pub(crate) fn breaker_open(&self) -> bool {
        self.breakers
            .as_ref()
            .is_some_and(|b| b.server_breaker().phase() == BreakerPhase::Open)
    }

    /// The server breaker's state, for displays.
    pub(crate) fn breaker_status(&self) -> Option<BreakerStatus> {
        self.breakers
            .as_ref()
            .map(|b| BreakerStatus::of(b.server_breaker().state()))
    }

    /// The smoothed probe latency, once it holds `min_samples` samples.
    pub(crate) fn latency(&self, min_samples: u64) -> Option<Duration> {
        self.metrics
            .probe_latency()
            .and_then(|(latency, samples)| (samples >= min_samples).then_some(latency))
    }

    /// What the routing decision knows of it at `now`.
    pub(crate) fn candidate(
        &self,
        now: Instant,
        failback_after: Duration,
        min_samples: u64,
    ) -> RouteCandidate {
        let (usable, settled) = match &*lock(&self.health) {
            Health::Unknown => (true, true),
            Health::Up { since, recovered } => (
                true,
                !recovered || now.saturating_duration_since(*since) >= failback_after,
            ),
            // Down only because its breaker opened: usable again once the breaker lets probe
            // calls through (half-open), but not settled until a probe or session says so.
            Health::Down { breaker: true, .. } => (true, false),
            Health::Down { breaker: false, .. } => (false, false),
        };
        let usable = usable && !self.breaker_open();
        RouteCandidate {
            usable,
            settled: usable && settled,
            local: self.local,
            latency: self.latency(min_samples),
        }
    }

    /// Its state for displays: down (failed, or breaker open), active, probing (not yet probed,
    /// or back but not yet for the failback period) or standby.
    pub(crate) fn state(&self, active: bool, candidate: &RouteCandidate) -> EndpointState {
        let known = !matches!(&*lock(&self.health), Health::Unknown);
        if !candidate.usable {
            EndpointState::Down
        } else if active {
            EndpointState::Active
        } else if !known || !candidate.settled {
            EndpointState::Probing
        } else {
            EndpointState::Standby
        }
    }

    /// Its report for displays.
    pub(crate) fn report(&self, active: bool, candidate: &RouteCandidate) -> EndpointReport {
        EndpointReport {
            url: self.url.clone(),
            region: self.region.clone(),
            state: self.state(active, candidate),
            active,
            latency: self.metrics.probe_latency().map(|(latency, _)| latency),
            breaker: self.breaker_status(),
            down_reason: self.down_reason(),
        }
    }

    /// Counts a call on this endpoint until the guard is dropped.
    #[inline]
    pub(crate) fn enter(&self) -> InFlight<'_> {
        // SeqCst: paired with the router's store of the active endpoint (see `Router::retire`).
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(&self.in_flight)
    }

    /// The counter of calls in flight, for waiting until they are over.
    pub(crate) fn in_flight(&self) -> Arc<AtomicUsize> {
        self.in_flight.clone()
    }

    /// Keeps the latest deadline of the calls sent here (nanoseconds since the router's
    /// epoch).
    #[inline]
    pub(crate) fn note_deadline(&self, since_epoch: u64) {
        if self.latest_deadline.load(Ordering::Relaxed) < since_epoch {
            self.latest_deadline
                .fetch_max(since_epoch, Ordering::SeqCst);
        }
    }

    /// The latest deadline of the calls sent here, for waiting until it passed.
    pub(crate) fn latest_deadline(&self) -> Arc<AtomicU64> {
        self.latest_deadline.clone()
    }

    /// The endpoint's pool, made on first use — only while `active` says it is the active
    /// endpoint, asked under the slot's lock (so a pool taken out by a move is never made
    /// again behind it: see `Router::retire`).
    #[cfg(feature = "pool")]
    pub(crate) fn pool(
        &self,
        active: impl FnOnce() -> bool,
        make: impl FnOnce() -> Option<mcp_pool::SessionPool>,
    ) -> Option<mcp_pool::SessionPool> {
        let mut slot = lock(&self.pool);
        if !active() {
            return None;
        }
        if slot.is_none() {
            *slot = make();
        }
        slot.clone()
    }

    /// Takes the pool out (to be closed once the calls on it are over); the next use makes a
    /// new one.
    #[cfg(feature = "pool")]
    pub(crate) fn take_pool(&self) -> Option<mcp_pool::SessionPool> {
        lock(&self.pool).take()
    }

    /// The pool's counters, for displays.
    #[cfg(feature = "pool")]
    pub(crate) fn pool_stats(&self) -> Option<mcp_pool::PoolStats> {
        lock(&self.pool).as_ref().map(mcp_pool::SessionPool::stats)
    }
}

/// A call in flight on an endpoint (counted until dropped).
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
