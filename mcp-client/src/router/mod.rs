//! Routing a server's calls across its endpoints (R-ROUTE, the `enterprise` profile): one
//! server, several URLs — usually one per region — and the nearest healthy one serves.
//!
//! - `choice.rs`: the decision — usable endpoints only, the client's region first, then the
//!   lowest smoothed probe latency, ties by configuration order, with hysteresis and a
//!   failback period ([`RoutingPolicy`]).
//! - `endpoint.rs`: one endpoint — its connector, breakers, pool, health and calls in flight.
//! - `gate.rs`: the innermost part of a routed server's stack: each call goes to the
//!   supervisor's session (pinned to the active endpoint) through that endpoint's breaker and
//!   pool, and a call never goes to an endpoint known to be down while another can take it.
//! - `prober.rs`: every endpoint is probed once per probe interval (a ping on the session of
//!   the endpoint carrying the calls; a new session, a ping and a close elsewhere).
//! - `failover.rs`: [`Failover`], the event reported when the traffic moves.
//!
//! **Sessions stay pinned.** The server's supervisor holds one session, on one endpoint, for its
//! whole life; the [`Router`] chooses where the supervisor's sessions are opened
//! ([`Router::connect`]) and asks it to move ([`SupervisorEvent::Reroute`]) when another
//! endpoint should carry the calls. A move opens a new session on the new endpoint (its resource
//! resources resubscribed there, its tools listed: a different list is an ordinary catalog
//! change), swaps it in, and closes the old endpoint's session and pool once the calls on them
//! are over ([`Router::retire`]). Calls that never reached a failed endpoint are sent again by
//! the retry layer, within their deadline, and the gate sends them to the new endpoint; a call
//! that may have been delivered is only sent again when it is safe, as for any retry.
//!
//! **One set of measurements.** The router keeps no window of its own: latency is the
//! endpoint's probe EWMA in `mcp-metrics` (the calls' own latency and counts are recorded there
//! too), and failures are the endpoint's circuit breaker — the same breaker that refuses calls.

mod choice;
mod endpoint;
mod failover;
mod gate;
mod prober;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::sync::lock;
use mcp_core::{Delivery, Error, ErrorKind};
use mcp_session::{ClientSession, SessionConnector};
use tokio::sync::{broadcast, mpsc};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

pub(crate) use choice::{choose, connect_order};
pub use choice::{RouteCandidate, RoutingPolicy};
pub(crate) use endpoint::{Endpoint, EndpointParts};
pub use failover::{EndpointRef, Failover, FailoverReason};
pub(crate) use gate::RoutedGate;

use crate::status::EndpointReport;
use crate::supervisor::SupervisorEvent;

/// No endpoint is active (before the first session, or never).
const NONE: u64 = u64::MAX;

/// How long the sessions of an endpoint being left wait, beyond the latest deadline of the
/// calls on it, before they are closed anyway.
const RETIRE_MARGIN: Duration = Duration::from_secs(1);

/// The least time an endpoint is given to open a session before not opening one counts as
/// its failure (less is the caller's deadline running out, not the endpoint).
const FAIR_SHARE: Duration = Duration::from_secs(1);

/// The part of a session's opening deadline kept for setting it up (tools listed,
/// resources resubscribed) after it opened, at most.
const SETUP_RESERVE: Duration = Duration::from_secs(2);

/// Where the calls go: which endpoint, and the how-many-th activation of one it is (so a call
/// holding the session of an earlier activation of the same endpoint, since retired, notices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The endpoint.
    pub(crate) endpoint: usize,
    /// The router's activation count then (0 for a server without a router).
    pub(crate) activation: u64,
}

impl Placement {
    /// A server without a router: endpoint 0, always.
    pub(crate) const SINGLE: Placement = Placement {
        endpoint: 0,
        activation: 0,
    };

    fn packed(self) -> u64 {
        (self.activation << 32) | (self.endpoint as u64 & 0xFFFF_FFFF)
    }

    fn unpacked(value: u64) -> Option<Placement> {
        (value != NONE).then(|| Placement {
            endpoint: usize::try_from(value & 0xFFFF_FFFF).unwrap_or(usize::MAX),
            activation: value >> 32,
        })
    }
}

/// How often the calls in flight on an endpoint being left are counted.
const RETIRE_POLL: Duration = Duration::from_millis(10);

/// One routed server's endpoints and where its calls go.
pub(crate) struct Router {
    server: String,
    endpoints: Vec<Endpoint>,
    policy: RoutingPolicy,
    failback_after: Duration,
    probe_interval: Duration,
    /// Bounds opening a session on one endpoint (the server's startup timeout).
    connect_timeout: Duration,
    /// Bounds a probe's ping.
    ping_timeout: Duration,
    /// How long the calls on an endpoint being left may go on before its sessions close, when
    /// none of them had a deadline.
    drain_limit: Duration,
    /// Where the supervisor's session is: a packed [`Placement`] ([`NONE`] before the first).
    active: AtomicU64,
    /// Deadlines are kept as nanoseconds since this instant.
    epoch: Instant,
    supervisor: mpsc::Sender<SupervisorEvent>,
    /// A [`SupervisorEvent::Reroute`] is in the supervisor's queue (one at a time: the queue
    /// carries the servers' notifications too).
    reroute_queued: AtomicBool,
    failovers: broadcast::Sender<Failover>,
    metrics: mcp_metrics::ServerHandle,
    /// Endpoints being left: their sessions and pools, closed once their calls are over.
    retiring: Mutex<JoinSet<()>>,
    prober: Mutex<Option<JoinHandle<()>>>,
}

/// What a router is made of.
pub(crate) struct RouterParts {
    pub(crate) server: String,
    pub(crate) endpoints: Vec<Endpoint>,
    pub(crate) policy: RoutingPolicy,
    pub(crate) failback_after: Duration,
    pub(crate) probe_interval: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) ping_timeout: Duration,
    pub(crate) drain_limit: Duration,
    pub(crate) supervisor: mpsc::Sender<SupervisorEvent>,
    pub(crate) failovers: broadcast::Sender<Failover>,
    pub(crate) metrics: mcp_metrics::ServerHandle,
}

impl Router {
    pub(crate) fn new(parts: RouterParts) -> Arc<Router> {
        Arc::new(Router {
            server: parts.server,
            endpoints: parts.endpoints,
            policy: parts.policy,
            failback_after: parts.failback_after,
            probe_interval: parts.probe_interval,
            connect_timeout: parts.connect_timeout,
            ping_timeout: parts.ping_timeout,
            drain_limit: parts.drain_limit,
            active: AtomicU64::new(NONE),
            epoch: Instant::now(),
            supervisor: parts.supervisor,
            reroute_queued: AtomicBool::new(false),
            failovers: parts.failovers,
            metrics: parts.metrics,
            retiring: Mutex::new(JoinSet::new()),
            prober: Mutex::new(None),
        })
    }

    /// The server's name.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// Endpoint `index`.
    #[inline]
    pub(crate) fn endpoint(&self, index: usize) -> Option<&Endpoint> {
        self.endpoints.get(index)
    }

    /// Every endpoint, in configuration order.
    pub(crate) fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// The endpoint carrying the calls.
    #[inline]
    pub(crate) fn active(&self) -> Option<usize> {
        self.placement().map(|p| p.endpoint)
    }

    /// Where the calls go now.
    #[inline]
    pub(crate) fn placement(&self) -> Option<Placement> {
        Placement::unpacked(self.active.load(Ordering::SeqCst))
    }

    /// `deadline` as nanoseconds since the router's epoch (what an endpoint keeps of its
    /// calls' latest deadline).
    #[inline]
    pub(crate) fn since_epoch(&self, deadline: Instant) -> u64 {
        u64::try_from(deadline.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// What the decision knows of every endpoint now.
    pub(crate) fn candidates(&self) -> Vec<RouteCandidate> {
        let now = Instant::now();
        self.endpoints
            .iter()
            .map(|e| e.candidate(now, self.failback_after, self.policy.min_samples))
            .collect()
    }

    /// Where the calls should go now (the active endpoint when nothing is clearly better).
    pub(crate) fn choice(&self) -> Option<usize> {
        choose(&self.candidates(), self.active(), &self.policy)
    }

    /// Asks the supervisor to move when another endpoint should carry the calls.
    pub(crate) fn evaluate(&self) {
        let active = self.active();
        let choice = choose(&self.candidates(), active, &self.policy);
        if active.is_some() && choice.is_some() && choice != active {
            self.reroute();
        }
    }

    /// Tells the supervisor to look at where its session should be: one event at a time
    /// (the supervisor says when it took it, [`reroute_taken`](Self::reroute_taken)), so calls
    /// waiting for a move never crowd the servers' notifications out of its queue.
    pub(crate) fn reroute(&self) {
        if !self.reroute_queued.swap(true, Ordering::AcqRel)
            && self.supervisor.try_send(SupervisorEvent::Reroute).is_err()
        {
            self.reroute_queued.store(false, Ordering::Release);
        }
    }

    /// The supervisor took the queued reroute (the next one is queued again).
    pub(crate) fn reroute_taken(&self) {
        self.reroute_queued.store(false, Ordering::Release);
    }

    /// Whether a call should wait for the move away from endpoint `index` instead of going to
    /// it: the endpoint is known down or its breaker is open, and another endpoint is usable.
    pub(crate) fn should_avoid(&self, index: usize) -> bool {
        let Some(endpoint) = self.endpoint(index) else {
            return false;
        };
        if !(endpoint.is_down() || endpoint.breaker_open()) {
            return false;
        }
        self.candidates()
            .iter()
            .enumerate()
            .any(|(i, c)| i != index && c.usable)
    }

    /// Endpoint `index` failed (`why`); when it carries the calls, the supervisor is asked to
    /// move.
    pub(crate) fn endpoint_failed(&self, index: usize, why: &str) {
        let Some(endpoint) = self.endpoint(index) else {
            return;
        };
        if endpoint.failed(why) {
            tracing::info!(server = %self.server, endpoint = %endpoint.url, reason = %why, "endpoint marked down");
        }
        if self.active() == Some(index) {
            self.reroute();
        }
    }

    /// Endpoint `index` answered (a health check of its session): up again.
    pub(crate) fn endpoint_answered(&self, index: usize) {
        if let Some(endpoint) = self.endpoint(index) {
            endpoint.answered(Instant::now());
        }
    }

    /// A session on endpoint `index` is set up (tools listed, resources resubscribed): the
    /// endpoint answered, and its breaker closes — a new session is a better probe than the
    /// breaker's own.
    pub(crate) fn session_ready(&self, index: usize) {
        if let Some(endpoint) = self.endpoint(index) {
            endpoint.connected(Instant::now());
        }
    }

    /// Whether calls must wait instead of going to endpoint `index` (the active one): it is
    /// known down and another endpoint is usable, or it is known unreachable (then the
    /// supervisor either moves, reconnects, or finds it answering and marks it up).
    pub(crate) fn must_wait(&self, index: usize) -> bool {
        self.endpoint(index)
            .is_some_and(|e| e.is_down() && (e.unreachable() || self.should_avoid(index)))
    }

    /// The breaker of endpoint `index` opened; when it carries the calls, the supervisor is
    /// asked to move.
    pub(crate) fn breaker_opened(&self, index: usize) {
        let Some(endpoint) = self.endpoint(index) else {
            return;
        };
        if endpoint.breaker_opened() {
            tracing::info!(server = %self.server, endpoint = %endpoint.url, "endpoint's circuit breaker opened; marked down");
        }
        if self.active() == Some(index) {
            self.reroute();
        }
    }

    /// The endpoint to move to from `current`, when the decision says to move.
    pub(crate) fn move_from(&self, current: usize) -> Option<usize> {
        self.choice().filter(|&target| target != current)
    }

    /// Opens a session on the best endpoint, before `deadline`: the decision's choice first,
    /// then the others in rank order (each given an equal share of the time left). `leaving` is
    /// the endpoint a move goes away from: never tried; and while it is still usable, only the
    /// decision's choice is (the move is for something better, not for anything else).
    pub(crate) async fn connect(
        &self,
        deadline: Instant,
        leaving: Option<usize>,
    ) -> Result<(ClientSession, usize), Error> {
        // Part of the time is kept for setting the session up once it opened.
        let reserve = (deadline.saturating_duration_since(Instant::now()) / 4).min(SETUP_RESERVE);
        let deadline = deadline.checked_sub(reserve).unwrap_or(deadline);
        let candidates = self.candidates();
        let chosen = choose(&candidates, leaving, &self.policy);
        let mut order = connect_order(&candidates, chosen, leaving);
        if let Some(leaving) = leaving.and_then(|i| candidates.get(i)) {
            if leaving.usable {
                order.retain(|&i| Some(i) == chosen);
            }
        }
        let mut failures: Vec<String> = Vec::new();
        let mut last: Option<Error> = None;
        let mut refused_credentials = 0;
        let count = order.len();
        for (tried, index) in order.into_iter().enumerate() {
            let endpoint = &self.endpoints[index];
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // An equal share of what is left, so one endpoint that hangs cannot take it all.
            let left = u32::try_from(count - tried).unwrap_or(u32::MAX).max(1);
            let share = deadline.saturating_duration_since(now) / left;
            let share_end =
                mcp_core::time::deadline_after(now, share.max(Duration::from_millis(1)));
            match tokio::time::timeout_at(share_end.min(deadline), endpoint.connector.connect())
                .await
            {
                // Set up by the supervisor, which says how that went (`session_ready`).
                Ok(Ok(session)) => return Ok((session, index)),
                Ok(Err(e)) => {
                    // One endpoint refusing credentials (its own headers, say) is that
                    // endpoint's failure; the server needs credentials only when all do.
                    if matches!(e.kind(), ErrorKind::Auth | ErrorKind::PermissionDenied) {
                        refused_credentials += 1;
                    }
                    endpoint.failed(e.message());
                    failures.push(format!("{}: {}", self.name_of(index), e.message()));
                    last = Some(e);
                }
                Err(_) => {
                    let why = format!(
                        "did not open a session within {}",
                        mcp_core::time::human_duration(share)
                    );
                    // A share too short to be fair says nothing about the endpoint.
                    if share >= FAIR_SHARE {
                        endpoint.failed(&why);
                    }
                    failures.push(format!("{}: {why}", self.name_of(index)));
                    last = Some(Error::timeout(why));
                }
            }
        }
        if refused_credentials > 0 && refused_credentials == failures.len() {
            if let Some(refusal) = last {
                return Err(refusal);
            }
        }
        // Credentials refused by some endpoints only: the server is unavailable, not waiting
        // for a login.
        let kind = match last.as_ref().map_or(ErrorKind::Timeout, Error::kind) {
            ErrorKind::Auth | ErrorKind::PermissionDenied => ErrorKind::Network,
            other => other,
        };
        let message = if failures.is_empty() {
            format!(
                "no endpoint of server \"{}\" could be tried before the deadline",
                self.server
            )
        } else {
            format!(
                "no endpoint of server \"{}\" answered: {}",
                self.server,
                failures.join("; ")
            )
        };
        Err(Error::new(kind, message).with_delivery(Delivery::NotSent))
    }

    /// `[region] url` (or just the URL), for messages.
    fn name_of(&self, index: usize) -> String {
        let endpoint = &self.endpoints[index];
        match &endpoint.region {
            Some(region) => format!("[{region}] {}", endpoint.url),
            None => endpoint.url.clone(),
        }
    }

    /// The supervisor's session on endpoint `index` is ready: it carries the calls from now on
    /// (returned: where, which the supervisor keeps with the session). A change of endpoint is
    /// counted, logged and reported as a [`Failover`], and the endpoint left has its pool
    /// retired.
    pub(crate) fn activated(&self, index: usize) -> Placement {
        let activation = self
            .placement()
            .map_or(1, |p| p.activation.wrapping_add(1) & 0xFFFF_FFFF);
        let placement = Placement {
            endpoint: index,
            activation,
        };
        let Some(endpoint) = self.endpoint(index) else {
            return placement;
        };
        let previous = Placement::unpacked(self.active.swap(placement.packed(), Ordering::SeqCst));
        let (address, port) = endpoint
            .config
            .transport
            .url()
            .and_then(crate::server::host_and_port)
            .unzip();
        self.metrics.set_server_address(address, port.flatten());
        self.metrics.set_region(endpoint.region.as_deref());
        let Some(previous) = previous
            .map(|p| p.endpoint)
            .filter(|&p| p != index && p < self.endpoints.len())
        else {
            return placement;
        };
        // After the new placement is stored (see `retire`).
        self.retire(previous, None);
        let from = &self.endpoints[previous];
        let reason = if from.unreachable() {
            FailoverReason::EndpointDown
        } else if from.breaker_open() || from.is_down() {
            FailoverReason::BreakerOpen
        } else if endpoint.local && !from.local {
            FailoverReason::Preferred
        } else {
            FailoverReason::Faster
        };
        self.metrics.failover();
        tracing::warn!(
            server = %self.server,
            from = %from.url,
            to = %endpoint.url,
            %reason,
            "server's calls moved to another endpoint"
        );
        let _ = self.failovers.send(Failover {
            server: self.server.clone(),
            from: from.reference(),
            to: endpoint.reference(),
            reason,
        });
        placement
    }

    /// Endpoint `index` is being left: its pool (and `session`, the supervisor's old one) are
    /// closed once the calls on them are over — at the latest a little after the latest
    /// deadline of the calls sent there (the drain limit when none had one).
    ///
    /// Called after the new placement is stored ([`activated`](Self::activated)). A call first
    /// counts itself on its endpoint and then checks that its placement is still the active
    /// one (both sequentially consistent), and a pool is only handed out (or made) under its
    /// slot's lock while its endpoint is active — so every call either sees the move (and goes
    /// to the new endpoint) or is counted here (and its session and pool stay open until it
    /// ends).
    pub(crate) fn retire(&self, index: usize, session: Option<ClientSession>) {
        let Some(endpoint) = self.endpoint(index) else {
            return;
        };
        #[cfg(feature = "pool")]
        let pool = endpoint.take_pool();
        let in_flight = endpoint.in_flight();
        let latest = endpoint.latest_deadline();
        let epoch = self.epoch;
        let fallback = self.drain_limit;
        let mut retiring = lock(&self.retiring);
        while retiring.try_join_next().is_some() {}
        retiring.spawn(async move {
            let now = Instant::now();
            let until = match latest.load(Ordering::SeqCst) {
                0 => mcp_core::time::deadline_after(now, fallback),
                nanos => {
                    mcp_core::time::deadline_after(epoch, Duration::from_nanos(nanos)).max(now)
                }
            };
            let until = mcp_core::time::deadline_after(until, RETIRE_MARGIN);
            // Closing is bounded too (by the same margin, at least).
            let limit = until.saturating_duration_since(now).max(RETIRE_MARGIN);
            while in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < until {
                tokio::time::sleep(RETIRE_POLL).await;
            }
            #[cfg(feature = "pool")]
            if let Some(pool) = pool {
                let _ = tokio::time::timeout(limit, pool.close()).await;
            }
            if let Some(session) = session {
                let _ = tokio::time::timeout(limit, session.close()).await;
            }
        });
    }

    /// The pool of endpoint `index` (made on first use), while it is the active endpoint;
    /// `None` otherwise (the call goes to the new endpoint instead).
    #[cfg(feature = "pool")]
    pub(crate) fn pool(
        &self,
        index: usize,
        policy: &crate::stack::StackPolicy,
    ) -> Option<mcp_pool::SessionPool> {
        let endpoint = self.endpoint(index)?;
        endpoint.pool(
            || self.active() == Some(index),
            || {
                crate::stack::pool_for(
                    &endpoint.config,
                    policy,
                    endpoint.connector.clone() as Arc<dyn mcp_session::SessionConnector>,
                )
            },
        )
    }

    /// Every endpoint's report, for displays.
    pub(crate) fn reports(&self) -> Vec<EndpointReport> {
        let active = self.active();
        self.candidates()
            .iter()
            .zip(&self.endpoints)
            .map(|(candidate, e)| e.report(active == Some(e.index), candidate))
            .collect()
    }

    /// Every endpoint's gauges, for metrics snapshots.
    pub(crate) fn gauges(&self) -> Vec<mcp_metrics::EndpointGauges> {
        self.reports()
            .into_iter()
            .map(|r| mcp_metrics::EndpointGauges {
                url: r.url,
                state: r.state.label().into(),
                active: r.active,
                breaker: r.breaker.map(|b| b.label().into()),
            })
            .collect()
    }

    /// Starts probing every endpoint once per probe interval (once).
    pub(crate) fn start_probing(self: &Arc<Self>, supervisor: &Arc<crate::supervisor::Supervisor>) {
        let mut prober = lock(&self.prober);
        if prober.is_none() {
            *prober = Some(prober::spawn(self, supervisor));
        }
    }

    /// Stops probing (at once).
    pub(crate) fn stop_probing(&self) {
        if let Some(prober) = lock(&self.prober).take() {
            prober.abort();
        }
    }

    /// Stops probing and closes every endpoint's pool (bounded by `limit`); sessions of
    /// endpoints being left are closed too.
    pub(crate) async fn stop(&self, limit: Duration) {
        self.stop_probing();
        self.active.store(NONE, Ordering::SeqCst);
        let mut closing = std::mem::take(&mut *lock(&self.retiring));
        #[cfg(feature = "pool")]
        for endpoint in &self.endpoints {
            if let Some(pool) = endpoint.take_pool() {
                closing.spawn(async move { pool.close().await });
            }
        }
        // Every pool and retiring session at once, under one bound.
        let _ = tokio::time::timeout(limit, async {
            while closing.join_next().await.is_some() {}
        })
        .await;
        closing.abort_all();
    }

    /// The probe interval.
    pub(crate) fn probe_interval(&self) -> Duration {
        self.probe_interval
    }

    /// How long opening a probe session may take.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// How long a probe's ping may take.
    pub(crate) fn ping_timeout(&self) -> Duration {
        self.ping_timeout
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        self.stop_probing();
    }
}
