//! The call stack of one server, built from its configuration's harness settings and the
//! profile's [`StackPolicy`]; a call passes through it from the outside in:
//!
//! ```text
//! metrics ─▶ timeout ─▶ retry ─▶ rate limit ─▶ breaker ─▶ gate ─▶ pool (remote servers) or tasks ─▶ the session
//! ```
//!
//! - **metrics** (outermost, every profile): counts, errors by kind, latency and rate per
//!   method and tool, as the caller sees the call ([`mcp_metrics::MetricsLayer`]); the breaker
//!   and pool are read from [`StackGauges`] when a snapshot is taken.
//! - **timeout**: the server's `tool_timeout` becomes every request's deadline, which
//!   every retry, wait and attempt below shares — the one place the facade's tool timeout lives.
//! - **retry**: `minimal` retries 3 times in all with a fixed 1 s wait; `professional` and
//!   `enterprise` back off (immediate, 1 s, 2 s, 4 s …) from the `retry` settings. A side-effecting
//!   tool is only sent again when the error proves it never reached the server.
//! - **rate limit** (`enterprise`, where configured): each attempt takes a permit.
//! - **breaker** (`enterprise`): counts network failures and timeouts of every attempt; an
//!   unavailable server is the supervisor's business, not the breaker's.
//! - **gate**: asks the server's supervisor for the session (waiting while it reconnects, failing
//!   at once while it is unavailable), and tells it when a call failed with a network error.
//! - **tasks** (every profile): a `tools/call` a 2026-07-28 server runs as a task (the Tasks
//!   extension) is followed to its end by [`mcp_tasks::FollowTasksLayer`] on the session that
//!   answered with it (the gate calls the session through it,
//!   [`call_session`](mcp_tasks::FollowTasksLayer::call_session), which skips the follower for
//!   a session whose server does not offer the extension), under the call's one
//!   deadline, its input requests answered through the server's handler — so every layer above
//!   sees one call and its result, as from a server that answered at once, and a routed call
//!   stays counted on its endpoint until the task ended. The `tasks/cancel` of an abandoned
//!   task is waited for when the server stops ([`ServerStack::tasks`]). A legacy session (the
//!   pool's) never declares the extension, so never sees a task.
//! - **pool** (`professional`, remote servers; stdio servers only when their entry names a
//!   `pool`): one pooled session per call — for legacy-era servers. A 2026-07-28 server keeps no
//!   session state, so its calls all share the supervised session (and the HTTP connections
//!   pooled under it); its pool stays empty.
//!
//! The policies are composed in one future per call (`StackService`): each policy's
//! `around` — the code its layer's service runs — called inside the next one's, with no box or
//! dynamic call between them (a rate-limited attempt is boxed: the larger future); a policy the
//! server does not have costs a branch.
//!
//! A server with several endpoints (`enterprise`: [`StackPolicy::routing`]) has the router's
//! gate instead of the breaker and the gate: one breaker and one pool per endpoint, in the
//! router (`router/`).

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;
use futures_util::FutureExt;
use mcp_core::service::CallFuture;
use mcp_core::{BoxService, Error, ErrorKind, McpService, Operation, Payload};
use mcp_resilience::{
    BreakerPolicy, CircuitBreakerLayer, RetryLayer, RetryPolicy, TimeoutLayer, TimeoutPolicy,
};
use tokio::time::Instant;

use crate::config::ServerConfig;
#[cfg(feature = "pool")]
use crate::config::TransportConfig;
use crate::router::{RoutedGate, Router};
use crate::status::{BreakerStatus, PoolReport};
use crate::supervisor::{Supervisor, SupervisorEvent};

/// How a server's requests are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryStyle {
    /// Never.
    Never,
    /// `minimal`: a fixed 1 s between tries, 3 tries in all (or `retry.max_retries` + 1 when
    /// the entry configures it).
    Fixed,
    /// `professional` and up: immediate, then 1 s, 2 s, 4 s … with jitter, from the `retry`
    /// settings.
    Backoff,
}

/// Which layers every server's call stack gets. `Default` is the compiled profile's
/// ([`StackPolicy::for_profile`] of [`PROFILE`](crate::PROFILE)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackPolicy {
    /// How requests are retried.
    pub retry: RetryStyle,
    /// Connection pools for remote servers (needs the `pool` feature; ignored without it).
    pub pools: bool,
    /// Pools that grow under waits and shrink when idle, instead of growing on demand.
    pub load_sized_pools: bool,
    /// A circuit breaker per server (and per tool where configured).
    pub breaker: bool,
    /// The configured rate limits (needs the `rate-limit` feature; ignored without it).
    pub rate_limit: bool,
    /// Servers with several `endpoints` are routed among them (the client's region first,
    /// then the lowest latency, failing over when one goes down). Without it such a server
    /// is unavailable, with a reason saying so.
    pub routing: bool,
}

impl StackPolicy {
    /// The `minimal` profile: fixed retry, nothing else.
    pub const fn minimal() -> StackPolicy {
        StackPolicy {
            retry: RetryStyle::Fixed,
            pools: false,
            load_sized_pools: false,
            breaker: false,
            rate_limit: false,
            routing: false,
        }
    }

    /// The `professional` profile: backoff retry and pools.
    pub const fn professional() -> StackPolicy {
        StackPolicy {
            retry: RetryStyle::Backoff,
            pools: true,
            ..StackPolicy::minimal()
        }
    }

    /// The `enterprise` profile: + breakers, rate limits, load-sized pools, routing across
    /// endpoints.
    pub const fn enterprise() -> StackPolicy {
        StackPolicy {
            retry: RetryStyle::Backoff,
            pools: true,
            load_sized_pools: true,
            breaker: true,
            rate_limit: true,
            routing: true,
        }
    }

    /// The policy of a profile by name (`minimal`, `professional`, `enterprise`; anything else
    /// is `minimal`).
    pub fn for_profile(profile: &str) -> StackPolicy {
        match profile {
            "enterprise" => StackPolicy::enterprise(),
            "professional" => StackPolicy::professional(),
            _ => StackPolicy::minimal(),
        }
    }
}

impl Default for StackPolicy {
    fn default() -> Self {
        StackPolicy::for_profile(crate::PROFILE)
    }
}

/// One server's stack and the handles its status display reads.
pub(crate) struct ServerStack {
    /// The stack: awaited in place by the facade's own calls
    /// ([`StackService::call_in_place`], no box), and handed out as a service
    /// ([`service`](Self::service)).
    pub(crate) calls: Arc<StackService>,
    /// The task follower the gate calls sessions through: stopping the server flushes the
    /// cancellations of the tasks it abandoned before the sessions close.
    pub(crate) tasks: mcp_tasks::FollowTasksLayer,
    #[cfg(feature = "pool")]
    pub(crate) pool: Option<mcp_pool::SessionPool>,
    /// The breaker and pool, as status displays and the metrics see them.
    pub(crate) gauges: Arc<StackGauges>,
}

impl ServerStack {
    /// The stack as a service, for whoever is handed it
    /// ([`McpClient::service`](crate::McpClient::service)).
    pub(crate) fn service(&self) -> BoxService {
        self.calls.clone()
    }
}

/// The live parts of a stack that status displays and metrics snapshots read.
pub(crate) struct StackGauges {
    breakers: Option<CircuitBreakerLayer>,
    #[cfg(feature = "pool")]
    pool: Option<mcp_pool::SessionPool>,
    /// A routed server's breakers and pools are its endpoints'.
    router: Option<Arc<Router>>,
}

/// The gauges as the metrics registry holds them: weakly, so that a registry the harness keeps
/// (or that the stack's own layers reach) never keeps a server's pool and connector alive.
struct WeakGauges(std::sync::Weak<StackGauges>);

impl mcp_metrics::GaugeSource for WeakGauges {
    fn gauges(&self) -> mcp_metrics::ServerGauges {
        self.0
            .upgrade()
            .map(|gauges| gauges.read())
            .unwrap_or_default()
    }
}

impl StackGauges {
    fn read(&self) -> mcp_metrics::ServerGauges {
        #[cfg(feature = "pool")]
        let pool = self.pool_stats().map(|stats| mcp_metrics::PoolGauges {
            connections: u64::from(stats.connections),
            in_use: u64::from(stats.in_use),
            idle: u64::from(stats.idle),
            waiting: u64::from(stats.waiting),
            waits: stats.waits,
        });
        #[cfg(not(feature = "pool"))]
        let pool = None;
        mcp_metrics::ServerGauges {
            breaker: self.breaker_status().map(|b| b.label().into()),
            pool,
            endpoints: self
                .router
                .as_ref()
                .map(|router| router.gauges())
                .unwrap_or_default(),
        }
    }

    /// The server breaker's state (a routed server's: the active endpoint's), for status
    /// displays.
    pub(crate) fn breaker_status(&self) -> Option<BreakerStatus> {
        if let Some(router) = &self.router {
            let active = router.active().and_then(|i| router.endpoint(i))?;
            return active.breaker_status();
        }
        self.breakers
            .as_ref()
            .map(|b| BreakerStatus::of(b.server_breaker().state()))
    }

    /// The pool's statistics (a routed server's: the active endpoint's).
    #[cfg(feature = "pool")]
    fn pool_stats(&self) -> Option<mcp_pool::PoolStats> {
        if let Some(router) = &self.router {
            let active = router.active().and_then(|i| router.endpoint(i))?;
            return active.pool_stats();
        }
        self.pool.as_ref().map(mcp_pool::SessionPool::stats)
    }

    /// The pool's counters, for status displays.
    pub(crate) fn pool_report(&self) -> Option<PoolReport> {
        #[cfg(feature = "pool")]
        {
            self.pool_stats().map(|stats| PoolReport {
                connections: stats.connections,
                in_use: stats.in_use,
                idle: stats.idle,
                waits: stats.waits,
            })
        }
        #[cfg(not(feature = "pool"))]
        None
    }

    /// A routed server's endpoints, for status displays (empty for other servers).
    pub(crate) fn endpoint_reports(&self) -> Vec<crate::status::EndpointReport> {
        self.router
            .as_ref()
            .map(|router| router.reports())
            .unwrap_or_default()
    }
}

/// Whether the breaker counts an error: the server failing (connection, timeout), not the
/// request being wrong, not the supervisor saying the server is away, and not time spent
/// inside the client (waiting for a reconnect or a pooled connection: never sent).
pub(crate) fn breaker_counts(error: &Error) -> bool {
    match error.kind() {
        ErrorKind::Network => true,
        ErrorKind::Timeout => !error.was_never_sent(),
        _ => false,
    }
}

/// The breakers of a server (or of one endpoint), labelled `label`, when the profile has them.
pub(crate) fn breakers_for(
    config: &ServerConfig,
    policy: &StackPolicy,
    label: String,
) -> Option<CircuitBreakerLayer> {
    policy.breaker.then(|| {
        let b = &config.settings.breaker;
        let mut breaker_policy = BreakerPolicy::default()
            .with_failure_threshold(b.failure_threshold)
            .with_window(b.window)
            .with_open_for(b.cooldown)
            .with_half_open_probes(b.half_open_max_requests)
            .with_failure_rule(breaker_counts);
        if b.per_tool {
            breaker_policy = breaker_policy.per_tool();
        }
        CircuitBreakerLayer::for_server(label, breaker_policy)
    })
}

/// Where a server's stack sends its calls: its supervisor's session (or a pool of sessions its
/// connector opens), through its router when it has several endpoints.
pub(crate) struct Upstream {
    pub(crate) supervisor: Arc<Supervisor>,
    pub(crate) connector: Arc<dyn mcp_session::SessionConnector>,
    pub(crate) router: Option<Arc<Router>>,
}

/// Builds the stack of `config`'s server around its upstream; `handler` and `session` are what
/// its sessions have (the task follower answers input requests with the same handler); a
/// `scope: "fleet"` rate limit takes its permits from `shared_permits` (the fleet's store).
pub(crate) fn build(
    config: &ServerConfig,
    policy: &StackPolicy,
    handler: Arc<dyn mcp_session::ClientHandler>,
    session: &mcp_session::SessionOptions,
    upstream: Upstream,
    metrics: &mcp_metrics::ServerHandle,
    #[cfg(feature = "rate-limit")] shared_permits: Option<Arc<dyn mcp_resilience::SharedPermits>>,
) -> ServerStack {
    let Upstream {
        supervisor,
        connector,
        router,
    } = upstream;
    let settings = &config.settings;
    #[cfg(feature = "pool")]
    let pool = match router {
        Some(_) => None,
        None => pool_for(config, policy, connector),
    };
    #[cfg(not(feature = "pool"))]
    let _ = connector;

    // Innermost, around the session each call is given: tasks are followed below every policy.
    let tasks = mcp_tasks::FollowTasksLayer::new(handler, session);
    let (gate, breakers) = match &router {
        Some(router) => (
            Gate::Routed(RoutedGate {
                supervisor,
                router: router.clone(),
                default_timeout: config.tool_timeout,
                tasks: tasks.clone(),
                #[cfg(feature = "pool")]
                stack: *policy,
            }),
            None,
        ),
        None => (
            Gate::Server(ServerGate {
                supervisor,
                default_timeout: config.tool_timeout,
                tasks: tasks.clone(),
                #[cfg(feature = "pool")]
                pool: pool.clone(),
            }),
            breakers_for(config, policy, config.name.clone()),
        ),
    };
    #[cfg(feature = "pool")]
    let pool_handle = pool.clone();

    #[cfg(feature = "rate-limit")]
    let rate_limit = settings
        .rate_limit
        .as_ref()
        .filter(|_| policy.rate_limit)
        .map(|limit| {
            use mcp_resilience::{RateLimitLayer, RateLimitMode, RateLimitPolicy};
            let per_second = NonZeroU32::new(limit.calls_per_sec).unwrap_or(NonZeroU32::MIN);
            let burst = NonZeroU32::new(limit.burst).unwrap_or(NonZeroU32::MIN);
            let rate_policy = RateLimitPolicy::per_second(per_second)
                .with_burst(burst)
                .with_mode(if limit.wait {
                    RateLimitMode::Wait
                } else {
                    RateLimitMode::Reject
                });
            match shared_permits {
                Some(permits) => RateLimitLayer::shared(rate_policy, permits),
                None => RateLimitLayer::new(rate_policy),
            }
        });
    #[cfg(not(feature = "rate-limit"))]
    let _ = NonZeroU32::MIN;

    let retry = match policy.retry {
        RetryStyle::Never => None,
        RetryStyle::Fixed => {
            let retries = if settings.retry.configured {
                settings.retry.max_retries
            } else {
                2
            };
            Some(RetryPolicy::fixed(Duration::from_secs(1), retries))
        }
        RetryStyle::Backoff => Some(
            RetryPolicy::default()
                .with_max_retries(settings.retry.max_retries)
                .with_max_total_wait(settings.retry.max_wait)
                .with_jitter(settings.retry.jitter),
        ),
    };

    // Every wait below ends by the deadline (session, gate, pool, retry, rate limit): the
    // stack sets it and needs no timer of its own.
    // Where progress resets the sessions' deadlines, the stack's deadline is the hard cap.
    let budget = if session.reset_timeout_on_progress {
        session.max_request_time
    } else {
        config.tool_timeout
    };
    let timeouts = TimeoutPolicy::default()
        .with_tool_call_timeout(budget)
        .with_default_timeout(budget)
        .without_backstop();
    let calls = Arc::new(StackService {
        metrics: metrics.layer(),
        timeout: TimeoutLayer::new(timeouts),
        retry: retry.map(RetryLayer::new),
        #[cfg(feature = "rate-limit")]
        rate_limit,
        breakers: breakers.clone(),
        gate,
    });

    let gauges = Arc::new(StackGauges {
        breakers,
        #[cfg(feature = "pool")]
        pool: pool_handle,
        router,
    });
    metrics.set_gauges(Arc::new(WeakGauges(Arc::downgrade(&gauges))));
    ServerStack {
        calls,
        tasks,
        #[cfg(feature = "pool")]
        pool,
        gauges,
    }
}

/// Whether `config`'s server gets a pool: one whose connections are cheap to multiply
/// (Streamable HTTP and `url` servers, detected; WebSocket and gRPC), or a stdio server whose
/// entry asks for one — when the profile has pools.
#[cfg(feature = "pool")]
pub(crate) fn wants_pool(config: &ServerConfig, policy: &StackPolicy) -> bool {
    let settings = &config.settings;
    let wanted = match &config.transport {
        TransportConfig::Http { .. }
        | TransportConfig::Url { .. }
        | TransportConfig::Remote { .. } => true,
        TransportConfig::Stdio { .. } => settings.pool.configured && settings.pool.max > 1,
        TransportConfig::Sse { .. } | TransportConfig::InProcess => false,
    };
    policy.pools && wanted
}

/// A pool for servers whose connections are cheap to multiply: Streamable HTTP (and `url`
/// servers, detected), and stdio servers whose entry asks for one.
#[cfg(feature = "pool")]
pub(crate) fn pool_for(
    config: &ServerConfig,
    policy: &StackPolicy,
    connector: Arc<dyn mcp_session::SessionConnector>,
) -> Option<mcp_pool::SessionPool> {
    if !wants_pool(config, policy) {
        return None;
    }
    let settings = &config.settings;
    let pool_config = mcp_pool::PoolConfig::new()
        .with_min_idle(settings.pool.min)
        .with_max_size(settings.pool.max)
        .with_idle_timeout(settings.idle_timeout)
        .with_connect_timeout(config.startup_timeout)
        .with_request_timeout(config.tool_timeout)
        .with_load_sized(policy.load_sized_pools);
    Some(mcp_pool::SessionPool::with_shared_connector(
        connector,
        pool_config,
    ))
}

/// Whether an operation must use the supervised session even when the server is pooled:
/// resource subscriptions are session state, updates arrive on the session that subscribed,
/// and the resource manager's cached contents are fresh only as long as that session's
/// subscriptions say — so reads go there too. (A tool call on a pooled session that changes
/// state the server keeps per session is not seen by the supervised one: the trade-off of
/// pooling a legacy-era server; a server whose state matters across calls is configured with
/// `pool: {max: 1}` or without a pool.)
#[cfg(feature = "pool")]
fn on_the_supervised_session(operation: &Operation) -> bool {
    matches!(
        operation.method.as_ref(),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe"
    )
}

/// Whether a pooled server's call goes through its pool: a legacy session may carry
/// per-session state, so each call gets a session of its own; a modern (2026-07-28) one has
/// none to protect, and its one session carries every call at once (HTTP connections are
/// pooled underneath); and resource operations stay on the supervised session.
#[cfg(feature = "pool")]
pub(crate) fn goes_through_the_pool(
    session: &mcp_session::ClientSession,
    operation: &Operation,
) -> bool {
    !session.is_modern() && !on_the_supervised_session(operation)
}

/// A server's call stack as one service: the policies' `around`s (the same code as their
/// layers' services) composed in one future — awaited in place by the facade, boxed once when
/// handed out as a service, never once per layer — and a policy the server does not have costs
/// a branch. The operation is handed down,
/// not copied at each level: metrics and the deadline are set before the attempts start, and
/// the retry keeps the one copy it sends again.
pub(crate) struct StackService {
    metrics: mcp_metrics::MetricsLayer,
    /// Sets the deadline every wait below ends by (no backstop: nothing here waits past it).
    timeout: TimeoutLayer,
    retry: Option<RetryLayer>,
    #[cfg(feature = "rate-limit")]
    rate_limit: Option<mcp_resilience::RateLimitLayer>,
    breakers: Option<CircuitBreakerLayer>,
    /// The server's gate, or a routed server's.
    gate: Gate,
}

impl StackService {
    /// One call through the stack, to await in place (inside the caller's future: the clock,
    /// the deadline and, with OpenTelemetry, the caller's context are read now): metrics ─▶
    /// timeout ─▶ the attempts.
    pub(crate) fn call_in_place(
        &self,
        operation: Operation,
    ) -> impl Future<Output = Result<Payload, Error>> + '_ {
        self.metrics.around(operation, |mut operation| {
            self.timeout.set_deadline(&mut operation);
            self.attempts(operation)
        })
    }

    /// retry (when the profile has it) ─▶ one attempt each time.
    fn attempts(&self, operation: Operation) -> impl Future<Output = Result<Payload, Error>> + '_ {
        match &self.retry {
            Some(retry) => {
                Either::Left(retry.around(operation, |operation| self.attempt(operation)))
            }
            None => Either::Right(self.attempt(operation)),
        }
    }

    /// rate limit ─▶ breaker ─▶ gate, each when the server has it.
    fn attempt(&self, operation: Operation) -> impl Future<Output = Result<Payload, Error>> + '_ {
        #[cfg(feature = "rate-limit")]
        if let Some(limit) = &self.rate_limit {
            // Boxed: a server with a rate limit pays one more allocation, the others nothing.
            let limited: mcp_core::service::CallFuture<'_> =
                Box::pin(limit.around(operation, |operation| self.guarded(operation)));
            return Either::Left(limited);
        }
        Either::<mcp_core::service::CallFuture<'_>, _>::Right(self.guarded(operation))
    }

    /// breaker ─▶ gate.
    fn guarded(&self, operation: Operation) -> impl Future<Output = Result<Payload, Error>> + '_ {
        match &self.breakers {
            Some(breakers) => {
                Either::Left(breakers.around(operation, |operation| self.gate.call(operation)))
            }
            None => Either::Right(self.gate.call(operation)),
        }
    }
}

// Written out instead of with `async_trait`: the one future of the whole stack.
impl McpService for StackService {
    fn call<'life0, 'async_trait>(
        &'life0 self,
        operation: Operation,
    ) -> mcp_core::service::CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // Everything starts once polled: `service.call(op).with_context(cx)` measures the call
        // in the caller's OpenTelemetry context.
        Box::pin(async move { self.call_in_place(operation).await })
    }
}

/// Where a stack's calls end: the server's gate, or a routed server's (whose endpoints have
/// their own breakers).
enum Gate {
    Server(ServerGate),
    Routed(RoutedGate),
    /// A scripted service in place of the server (the stack's own tests).
    #[cfg(test)]
    Scripted(BoxService),
}

impl Gate {
    fn call(&self, operation: Operation) -> impl Future<Output = Result<Payload, Error>> + '_ {
        match self {
            Gate::Server(gate) => Either::Left(gate.call(operation)),
            Gate::Routed(gate) => Either::Right(
                Either::<_, mcp_core::service::CallFuture<'_>>::Left(gate.call(operation)),
            ),
            #[cfg(test)]
            Gate::Scripted(service) => Either::Right(Either::Right(service.call(operation))),
        }
    }
}

/// The innermost part of a server's stack: the supervisor's session (through the task
/// follower), or the pool, once the server is there.
struct ServerGate {
    supervisor: Arc<Supervisor>,
    default_timeout: Duration,
    tasks: mcp_tasks::FollowTasksLayer,
    #[cfg(feature = "pool")]
    pool: Option<mcp_pool::SessionPool>,
}

impl ServerGate {
    /// One call, on the supervisor's session or a pooled one. Once the server is ready (the
    /// common case) the call's future is made at once and the gate's future holds only it: no
    /// copy of the operation beside it. The session is picked now: call it where the call
    /// starts.
    fn call(&self, operation: Operation) -> impl Future<Output = Result<Payload, Error>> + '_ {
        let call = match self.supervisor.ready_now() {
            Some(session) => self.send(session, operation),
            // Boxed: rare, and the call's future stays small.
            None => Box::pin(async move {
                let deadline = operation
                    .options
                    .deadline_from(Instant::now(), self.default_timeout);
                match self.supervisor.ready_session(deadline).await {
                    Ok(session) => self.send(session, operation).await,
                    Err(e) => Err(operation.attach_subject(e)),
                }
            }),
        };
        call.inspect(|result| {
            if let Err(e) = result {
                if e.kind() == ErrorKind::Network {
                    self.supervisor.tell(SupervisorEvent::Suspect);
                }
            }
        })
    }

    /// The call's future on `session`, or on a pooled one.
    fn send(&self, session: mcp_session::ClientSession, operation: Operation) -> CallFuture<'_> {
        #[cfg(feature = "pool")]
        if let Some(pool) = &self.pool {
            if goes_through_the_pool(&session, &operation) {
                return pool.call(operation);
            }
        }
        self.tasks.call_session(session, operation)
    }
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
