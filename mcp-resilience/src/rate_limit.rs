//! A per-server rate limit on [`governor`] (feature `rate-limit`): at most so many calls per
//! second, with a burst allowance.
//!
//! In [`RateLimitMode::Wait`] (the default) a call over the limit waits for its permit — unless
//! the permit would come only at or after the operation's deadline (or later than
//! [`RateLimitPolicy::max_wait`]), in which case it fails at once rather than wait uselessly. In
//! [`RateLimitMode::Reject`] it fails at once. Either way the error is
//! [`ErrorKind::RateLimited`], names the limit, says when to retry, and was never sent.
//!
//! # One limit for a fleet
//!
//! [`RateLimitLayer::new`] limits this process. [`RateLimitLayer::shared`] limits every process
//! (replica) that shares one [`SharedPermits`] — e.g. `mcp-fleet`'s permits on Redis: each
//! decision asks the shared permits first, and the same wait, reject, deadline and `max_wait`
//! rules apply to their answer.
//!
//! When the shared permits cannot answer (Redis is down), the limiter falls back to its own
//! local limit at the **full** rate, with one warning per outage (and an info line when they
//! answer again). So while the shared state is gone each replica allows the full N calls/s: the
//! fleet may go up to replicas × N until it is back. The other choices were worse: failing every
//! call stops the fleet over an outage of its bookkeeping, and a share of N per replica needs a
//! replica count that nobody knows for sure while the shared state is gone. The upstream
//! server's own limits (429s, answered by the retry layer) still apply.
//!
//! A decision waits for the shared permits at most half a second (and never past the request's
//! deadline); one that fails makes the next second's decisions local without asking (one
//! caller asks again after it), so a store that hangs costs a caller at most half a second,
//! once a second — not a timeout per call.

use std::fmt;
use std::future::Future;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use mcp_core::service::CallFuture;
use mcp_core::{Delivery, Error, ErrorKind, Layer, McpService, Operation, Payload};
use tokio::time::Instant;

use crate::clock::{TokioClock, TokioInstant};
use crate::instant_after;

/// What a call over the limit does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateLimitMode {
    /// Wait for a permit, within the operation's deadline and [`RateLimitPolicy::max_wait`].
    #[default]
    Wait,
    /// Fail at once.
    Reject,
}

/// How many calls per second one server gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitPolicy {
    /// Sustained calls per second. Default: 5.
    pub calls_per_second: NonZeroU32,
    /// Calls allowed at once after a quiet spell. Default: 10.
    pub burst: NonZeroU32,
    /// Wait or reject. Default: wait.
    pub mode: RateLimitMode,
    /// The longest a call waits for a permit, for operations without a deadline (with one, the
    /// earlier of the two bounds the wait). Default: 30 s.
    pub max_wait: Duration,
}

impl Default for RateLimitPolicy {
    /// 5 calls/s, burst 10, waiting up to 30 s within the deadline.
    fn default() -> Self {
        RateLimitPolicy {
            calls_per_second: non_zero(5),
            burst: non_zero(10),
            mode: RateLimitMode::Wait,
            max_wait: Duration::from_secs(30),
        }
    }
}

impl RateLimitPolicy {
    /// `calls_per_second`, with a burst of as many (the other settings default).
    pub fn per_second(calls_per_second: NonZeroU32) -> Self {
        RateLimitPolicy {
            calls_per_second,
            burst: calls_per_second,
            ..RateLimitPolicy::default()
        }
    }

    /// Sets the burst.
    pub fn with_burst(mut self, burst: NonZeroU32) -> Self {
        self.burst = burst;
        self
    }

    /// Sets the mode.
    pub fn with_mode(mut self, mode: RateLimitMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the longest wait for a permit.
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// The time between permits once the burst is spent (1 s / calls per second).
    pub fn interval(&self) -> Duration {
        self.quota().replenish_interval()
    }

    fn quota(&self) -> Quota {
        Quota::per_second(self.calls_per_second).allow_burst(self.burst)
    }
}

impl fmt::Display for RateLimitPolicy {
    /// "5 calls/s (burst 10)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calls/s (burst {})",
            self.calls_per_second, self.burst
        )
    }
}

/// `n` as a `NonZeroU32`, for constants (0 would become 1).
const fn non_zero(n: u32) -> NonZeroU32 {
    match NonZeroU32::new(n) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    }
}

/// Permits that several processes share — one limit for a fleet of replicas (see the module
/// docs). `mcp-fleet`'s `RedisPermits` keeps them on Redis.
///
/// An implementation bounds its own round trip (a timeout) and reports a shared state it
/// cannot reach as `Err`; the limiter then falls back to its local limit.
#[async_trait]
pub trait SharedPermits: Send + Sync + 'static {
    /// Takes one permit of `policy` if one is free: `Ok(None)` when taken, `Ok(Some(wait))` when
    /// the next one is free only `wait` from now (nothing was taken), `Err(reason)` when the
    /// shared state cannot be reached (the reason names it, never a secret).
    async fn try_take(&self, policy: &RateLimitPolicy) -> Result<Option<Duration>, String>;

    /// Where the permits are kept, for messages ("Redis at redis://10.0.0.5:6379/0, key
    /// mcph:ratelimit:github").
    fn describe(&self) -> String;
}

type Governor = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<TokioInstant>>;

struct Limiter {
    policy: RateLimitPolicy,
    /// The local limit: the only one without shared permits, the fallback with them.
    governor: Governor,
    /// The fleet's permits, asked first ([`RateLimitLayer::shared`]).
    fleet: Option<FleetPermits>,
}

/// After the shared permits failed to answer, how long decisions are local before they are
/// asked again (one caller asks; the others stay local meanwhile): a Redis that hangs costs
/// one timeout per second, not one per call.
const SHARED_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The longest one decision waits for the shared permits (within the request's deadline too):
/// a fleet's store answers in well under a millisecond on a LAN, and one that has not answered
/// by then is treated as unreachable.
const SHARED_ASK_LIMIT: Duration = Duration::from_millis(500);

/// Shared permits and whether they are unreachable right now (one warning per outage).
struct FleetPermits {
    permits: Arc<dyn SharedPermits>,
    unreachable: AtomicBool,
    /// While unreachable: when they are asked again.
    retry_at: std::sync::Mutex<Option<Instant>>,
}

impl FleetPermits {
    /// Whether to ask the shared permits now: always while they answer; during an outage,
    /// once per [`SHARED_RETRY_AFTER`] (the caller that asks moves the next try on).
    fn ask_now(&self) -> bool {
        if !self.unreachable.load(Ordering::Relaxed) {
            return true;
        }
        let mut retry_at = mcp_core::sync::lock(&self.retry_at);
        let now = Instant::now();
        if retry_at.is_some_and(|at| now < at) {
            return false;
        }
        *retry_at = Some(now + SHARED_RETRY_AFTER);
        true
    }

    /// The shared permits answered: ends an outage, if there was one.
    fn answered(&self) {
        if self.unreachable.swap(false, Ordering::Relaxed) {
            tracing::info!(
                shared = %self.permits.describe(),
                "the fleet's rate limit answers again; no longer limiting this process alone"
            );
        }
    }

    /// The shared permits did not answer: warns once per outage.
    fn failed(&self, reason: &str, policy: &RateLimitPolicy) {
        *mcp_core::sync::lock(&self.retry_at) = Some(Instant::now() + SHARED_RETRY_AFTER);
        if !self.unreachable.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                shared = %self.permits.describe(),
                %reason,
                "the fleet's rate limit is unreachable: limiting this process alone to {policy} \
                 until it answers again (the fleet as a whole may exceed the limit meanwhile)"
            );
        }
    }
}

/// Wraps a service in a rate limit. Clones share the limit: use one layer per server.
#[derive(Clone)]
pub struct RateLimitLayer {
    limiter: Arc<Limiter>,
}

impl fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("policy", &self.limiter.policy)
            .field("shared", &self.limiter.shared_description())
            .finish()
    }
}

impl RateLimitLayer {
    /// A layer limiting this process by `policy`.
    pub fn new(policy: RateLimitPolicy) -> Self {
        RateLimitLayer::with_fleet(policy, None)
    }

    /// A layer limiting every process that shares `permits` by `policy` together; while the
    /// permits cannot be reached, this process alone by `policy` (see the module docs).
    pub fn shared(policy: RateLimitPolicy, permits: Arc<dyn SharedPermits>) -> Self {
        RateLimitLayer::with_fleet(
            policy,
            Some(FleetPermits {
                permits,
                unreachable: AtomicBool::new(false),
                retry_at: std::sync::Mutex::new(None),
            }),
        )
    }

    fn with_fleet(policy: RateLimitPolicy, fleet: Option<FleetPermits>) -> Self {
        RateLimitLayer {
            limiter: Arc::new(Limiter {
                governor: RateLimiter::direct_with_clock(policy.quota(), TokioClock),
                policy,
                fleet,
            }),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &RateLimitPolicy {
        &self.limiter.policy
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> RateLimitService<S> {
        RateLimitService {
            inner,
            layer: self.clone(),
        }
    }
}

/// A rate-limited service (see [`RateLimitLayer`]).
#[derive(Clone)]
pub struct RateLimitService<S> {
    inner: S,
    layer: RateLimitLayer,
}

impl<S: fmt::Debug> fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitService")
            .field("inner", &self.inner)
            .field("policy", &self.layer.limiter.policy)
            .field("shared", &self.layer.limiter.shared_description())
            .finish()
    }
}

impl<S> RateLimitService<S> {
    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl Limiter {
    /// Takes a permit, waiting for one if the mode and the deadline allow.
    async fn acquire(&self, operation: &Operation) -> Result<(), Error> {
        let started = Instant::now();
        let waited_long_enough = instant_after(started, self.policy.max_wait);
        loop {
            // The local path checks governor in place: no extra await, nothing boxed.
            let next = match &self.fleet {
                None => self.try_take_locally(),
                Some(fleet) => self.try_take_from(fleet, operation).await,
            };
            let Some(wait) = next else {
                return Ok(());
            };
            let now = Instant::now();
            let why_not = match (self.policy.mode, instant_after(now, wait)) {
                (RateLimitMode::Reject, _) => None,
                (RateLimitMode::Wait, None) => Some("comes too late to wait for"),
                (RateLimitMode::Wait, Some(ready)) => {
                    if operation.options.deadline.is_some_and(|d| ready >= d) {
                        Some("comes after the request's deadline")
                    } else if waited_long_enough.is_some_and(|limit| ready > limit) {
                        Some("comes later than the longest wait allowed")
                    } else {
                        tracing::debug!(
                            method = %operation.method,
                            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                            "waiting for a rate-limit permit"
                        );
                        tokio::time::sleep_until(ready).await;
                        // Another caller may have taken this permit: check again.
                        continue;
                    }
                }
            };
            return Err(self.rejection(operation, wait, why_not));
        }
    }

    /// Takes a local permit (`None`) or says how long until the next one.
    #[inline]
    fn try_take_locally(&self) -> Option<Duration> {
        match self.governor.check() {
            Ok(()) => None,
            Err(not_until) => Some(not_until.wait_time_from(TokioClock.now())),
        }
    }

    /// Takes a permit (`None`) or says how long until the next one: from the fleet's permits
    /// when they answer — within the operation's deadline — else from the local limit.
    async fn try_take_from(&self, fleet: &FleetPermits, operation: &Operation) -> Option<Duration> {
        if !fleet.ask_now() {
            return self.try_take_locally();
        }
        let limit = Instant::now() + SHARED_ASK_LIMIT;
        let deadline_first = operation.options.deadline.is_some_and(|d| d < limit);
        let until = operation.options.deadline.map_or(limit, |d| d.min(limit));
        match tokio::time::timeout_at(until, fleet.permits.try_take(&self.policy)).await {
            Ok(Ok(wait)) => {
                fleet.answered();
                wait
            }
            Ok(Err(reason)) => {
                fleet.failed(&reason, &self.policy);
                self.try_take_locally()
            }
            // This request's own deadline came first: its decision is local, and says nothing
            // about the shared permits.
            Err(_) if deadline_first => self.try_take_locally(),
            Err(_) => {
                fleet.failed(
                    &format!("no answer within {SHARED_ASK_LIMIT:?}"),
                    &self.policy,
                );
                self.try_take_locally()
            }
        }
    }

    fn shared_description(&self) -> Option<String> {
        self.fleet.as_ref().map(|fleet| fleet.permits.describe())
    }

    fn rejection(&self, operation: &Operation, wait: Duration, why_not: Option<&str>) -> Error {
        let mut message = format!("rate limit of {} reached", self.policy);
        if let Some(fleet) = &self.fleet {
            if !fleet.unreachable.load(Ordering::Relaxed) {
                message.push_str(&format!(" (shared: {})", fleet.permits.describe()));
            }
        }
        if let Some(why_not) = why_not {
            message.push_str(&format!("; the next permit (in {wait:?}) {why_not}"));
        }
        operation.attach_subject(
            Error::new(ErrorKind::RateLimited, message)
                .with_retry_after(wait)
                .with_delivery(Delivery::NotSent),
        )
    }
}

impl RateLimitLayer {
    /// Takes a permit for `operation` (waiting for one within its deadline, or refusing, by
    /// the policy's mode), then calls `next` with it — what [`RateLimitService`] does around
    /// its inner service, for a stack that composes its policies in one future instead of a
    /// service per layer.
    pub async fn around<F, Fut>(&self, operation: Operation, next: F) -> Result<Payload, Error>
    where
        F: FnOnce(Operation) -> Fut,
        Fut: Future<Output = Result<Payload, Error>>,
    {
        self.limiter.acquire(&operation).await?;
        next(operation).await
    }
}

// Written out instead of with `async_trait`: the boxed future is the layer's `around`, not one
// more future around it holding a second copy of the operation.
impl<S: McpService> McpService for RateLimitService<S> {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(
            self.layer
                .around(operation, |operation| self.inner.call(operation)),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::time::Duration;

    use mcp_core::{Delivery, ErrorKind, Layer, McpService, Operation, RequestOptions};
    use tokio::time::Instant;

    use super::*;
    use crate::test_support::{tool_call, Scripted};

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    #[test]
    fn defaults_are_five_per_second_burst_ten_waiting() {
        let policy = RateLimitPolicy::default();
        assert_eq!(policy.to_string(), "5 calls/s (burst 10)");
        assert_eq!(policy.mode, RateLimitMode::Wait);
        assert_eq!(policy.interval(), Duration::from_millis(200));
        assert_eq!(policy.max_wait, Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn burst_passes_at_once_then_wait_mode_waits_exactly_the_interval() {
        let server = Scripted::new();
        let service = RateLimitLayer::new(RateLimitPolicy::default()).layer(server.clone());
        let t0 = Instant::now();
        for _ in 0..13 {
            service.call(tool_call("search")).await.unwrap();
        }
        let offsets: Vec<_> = server.starts().iter().map(|t| *t - t0).collect();
        let mut expected = vec![Duration::ZERO; 10];
        expected.extend([200, 400, 600].map(Duration::from_millis));
        assert_eq!(offsets, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn reject_mode_fails_at_once_naming_the_limit() {
        let server = Scripted::new();
        let policy = RateLimitPolicy::default().with_mode(RateLimitMode::Reject);
        let service = RateLimitLayer::new(policy).layer(server.clone());
        for _ in 0..10 {
            service.call(tool_call("search")).await.unwrap();
        }
        let t0 = Instant::now();
        let error = service.call(tool_call("search")).await.unwrap_err();
        assert_eq!(Instant::now(), t0, "no wait");
        assert_eq!(server.calls(), 10, "nothing sent");
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(
            error.message(),
            "rate limit of 5 calls/s (burst 10) reached"
        );
        assert_eq!(error.retry_after(), Some(Duration::from_millis(200)));
        assert_eq!(error.delivery(), Some(Delivery::NotSent));
        assert_eq!(error.subject(), Some("search"));
        assert_eq!(
            error.agent_message(),
            "tool search is rate-limited: too many calls to its server; try again in 1s"
        );
        // One interval later a permit is there again.
        tokio::time::advance(Duration::from_millis(200)).await;
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(server.calls(), 11);
    }

    #[tokio::test(start_paused = true)]
    async fn wait_mode_fails_at_once_when_the_permit_comes_after_the_deadline() {
        let server = Scripted::new();
        let policy = RateLimitPolicy::per_second(nz(1));
        let service = RateLimitLayer::new(policy).layer(server.clone());
        service.call(tool_call("search")).await.unwrap();
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_millis(999);
        let error = service
            .call(tool_call("search").with_options(RequestOptions::new().with_deadline(deadline)))
            .await
            .unwrap_err();
        assert_eq!(Instant::now(), t0, "no useless wait");
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(
            error.message(),
            "rate limit of 1 calls/s (burst 1) reached; the next permit (in 1s) comes after the request's deadline"
        );
        assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
        // A deadline just past the permit is waited for, exactly.
        let deadline = t0 + Duration::from_millis(1001);
        service
            .call(
                Operation::new("ping", None)
                    .with_options(RequestOptions::new().with_deadline(deadline)),
            )
            .await
            .unwrap();
        assert_eq!(Instant::now() - t0, Duration::from_secs(1));
        assert_eq!(server.calls(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn wait_mode_never_waits_longer_than_max_wait() {
        let server = Scripted::new();
        let policy = RateLimitPolicy::per_second(nz(1)).with_max_wait(Duration::from_millis(500));
        let service = RateLimitLayer::new(policy).layer(server.clone());
        service.call(Operation::new("ping", None)).await.unwrap();
        let t0 = Instant::now();
        let error = service
            .call(Operation::new("ping", None))
            .await
            .unwrap_err();
        assert_eq!(Instant::now(), t0);
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert!(
            error.message().contains("longest wait"),
            "{}",
            error.message()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn every_service_of_one_layer_shares_the_limit() {
        let layer = RateLimitLayer::new(
            RateLimitPolicy::per_second(nz(2)).with_mode(RateLimitMode::Reject),
        );
        let a = layer.layer(Scripted::new());
        let b = layer.clone().layer(Scripted::new());
        a.call(Operation::new("ping", None)).await.unwrap();
        b.call(Operation::new("ping", None)).await.unwrap();
        assert_eq!(
            a.call(Operation::new("ping", None))
                .await
                .unwrap_err()
                .kind(),
            ErrorKind::RateLimited
        );
        // A separate layer is a separate server.
        let other = RateLimitLayer::new(layer.policy().to_owned()).layer(Scripted::new());
        other.call(Operation::new("ping", None)).await.unwrap();
    }

    /// Shared permits that answer from a script (then "taken"), counting the questions.
    struct ScriptedPermits {
        answers: std::sync::Mutex<std::collections::VecDeque<Result<Option<Duration>, String>>>,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl ScriptedPermits {
        fn new(
            answers: impl IntoIterator<Item = Result<Option<Duration>, String>>,
        ) -> Arc<ScriptedPermits> {
            Arc::new(ScriptedPermits {
                answers: std::sync::Mutex::new(answers.into_iter().collect()),
                asked: std::sync::atomic::AtomicUsize::new(0),
            })
        }

        fn asked(&self) -> usize {
            self.asked.load(Ordering::SeqCst)
        }
    }

    #[async_trait]
    impl SharedPermits for ScriptedPermits {
        async fn try_take(&self, _: &RateLimitPolicy) -> Result<Option<Duration>, String> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            mcp_core::sync::lock(&self.answers)
                .pop_front()
                .unwrap_or(Ok(None))
        }

        fn describe(&self) -> String {
            "the test's permits".into()
        }
    }

    /// Counts the warnings and infos this module logs (no subscriber crate in this crate's
    /// dependencies: the smallest `Subscriber` that counts events).
    #[derive(Clone, Default)]
    struct CountEvents {
        warnings: Arc<std::sync::atomic::AtomicUsize>,
        infos: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl tracing::Subscriber for CountEvents {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let metadata = event.metadata();
            if metadata.target() != module_path!().trim_end_matches("::tests") {
                return;
            }
            match *metadata.level() {
                tracing::Level::WARN => self.warnings.fetch_add(1, Ordering::SeqCst),
                tracing::Level::INFO => self.infos.fetch_add(1, Ordering::SeqCst),
                _ => 0,
            };
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    impl CountEvents {
        fn warnings(&self) -> usize {
            self.warnings.load(Ordering::SeqCst)
        }
        fn infos(&self) -> usize {
            self.infos.load(Ordering::SeqCst)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn shared_permits_decide_and_the_local_limit_stays_out_of_the_way() {
        let server = Scripted::new();
        let permits = ScriptedPermits::new([]);
        let layer = RateLimitLayer::shared(RateLimitPolicy::default(), permits.clone());
        let service = layer.layer(server.clone());
        let t0 = Instant::now();
        // Twice the local burst: the shared permits say yes each time, so nobody waits.
        for _ in 0..20 {
            service.call(tool_call("search")).await.unwrap();
        }
        assert_eq!(Instant::now(), t0);
        assert_eq!(server.calls(), 20);
        assert_eq!(permits.asked(), 20, "one question per call");
        assert!(format!("{layer:?}").contains("the test's permits"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_wait_is_waited_exactly_and_asked_again() {
        let server = Scripted::new();
        let permits = ScriptedPermits::new([Ok(Some(Duration::from_millis(300))), Ok(None)]);
        let service = RateLimitLayer::shared(RateLimitPolicy::default(), permits.clone())
            .layer(server.clone());
        let t0 = Instant::now();
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(Instant::now() - t0, Duration::from_millis(300));
        assert_eq!(permits.asked(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_wait_past_the_deadline_or_in_reject_mode_fails_at_once() {
        let server = Scripted::new();
        let permits = ScriptedPermits::new([
            Ok(Some(Duration::from_secs(2))),
            Ok(Some(Duration::from_millis(250))),
        ]);
        let policy = RateLimitPolicy::default();
        let service = RateLimitLayer::shared(policy, permits.clone()).layer(server.clone());
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(1);
        let error = service
            .call(tool_call("search").with_options(RequestOptions::new().with_deadline(deadline)))
            .await
            .unwrap_err();
        assert_eq!(Instant::now(), t0, "no useless wait");
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(error.delivery(), Some(Delivery::NotSent));
        assert_eq!(
            error.message(),
            "rate limit of 5 calls/s (burst 10) reached (shared: the test's permits); the next \
             permit (in 2s) comes after the request's deadline"
        );

        let reject = RateLimitLayer::shared(policy.with_mode(RateLimitMode::Reject), permits)
            .layer(server.clone());
        let error = reject.call(tool_call("search")).await.unwrap_err();
        assert_eq!(Instant::now(), t0);
        assert_eq!(error.retry_after(), Some(Duration::from_millis(250)));
        assert_eq!(server.calls(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn unreachable_shared_permits_fall_back_to_the_full_local_rate_warning_once() {
        let events = CountEvents::default();
        let _guard = tracing::subscriber::set_default(events.clone());
        let server = Scripted::new();
        let down =
            || Err::<Option<Duration>, String>("Redis at redis://db:6379 unreachable".into());
        // Down; a second later it answers again; then another outage.
        let permits = ScriptedPermits::new(vec![down(), Ok(None), down()]);
        let service = RateLimitLayer::shared(RateLimitPolicy::default(), permits.clone())
            .layer(server.clone());
        let t0 = Instant::now();
        // 13 calls while down: the local burst of 10, then one per 200 ms.
        for _ in 0..13 {
            service.call(tool_call("search")).await.unwrap();
        }
        let offsets: Vec<_> = server.starts().iter().map(|t| *t - t0).collect();
        let mut expected = vec![Duration::ZERO; 10];
        expected.extend([200, 400, 600].map(Duration::from_millis));
        assert_eq!(offsets, expected, "the local limit, at the full rate");
        assert_eq!(
            permits.asked(),
            1,
            "not asked again within a second of failing"
        );
        assert_eq!(events.warnings(), 1, "one warning for the whole outage");
        assert_eq!(events.infos(), 0);

        tokio::time::advance(SHARED_RETRY_AFTER).await;
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(permits.asked(), 2, "asked again after a second");
        assert_eq!(events.infos(), 1, "said once that it answers again");
        // The next outage warns again, once.
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(events.warnings(), 2);
        assert_eq!(server.calls(), 15);
    }

    /// Shared permits that never answer (a Redis that hangs).
    struct HangingPermits;

    #[async_trait]
    impl SharedPermits for HangingPermits {
        async fn try_take(&self, _: &RateLimitPolicy) -> Result<Option<Duration>, String> {
            std::future::pending().await
        }
        fn describe(&self) -> String {
            "hanging permits".into()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn hanging_shared_permits_cost_a_call_half_a_second_at_most_once_a_second() {
        let server = Scripted::new();
        let service = RateLimitLayer::shared(RateLimitPolicy::default(), Arc::new(HangingPermits))
            .layer(server.clone());
        let t0 = Instant::now();
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(
            server.starts(),
            vec![t0 + SHARED_ASK_LIMIT],
            "then the local limit"
        );
        // A shorter deadline bounds the wait too.
        tokio::time::advance(SHARED_RETRY_AFTER).await;
        let t1 = Instant::now();
        let deadline = t1 + Duration::from_millis(100);
        service
            .call(tool_call("search").with_options(RequestOptions::new().with_deadline(deadline)))
            .await
            .unwrap();
        assert_eq!(server.starts()[1], deadline);
        // Within the next second the local limit decides at once.
        let t2 = Instant::now();
        service.call(tool_call("search")).await.unwrap();
        assert_eq!(server.starts()[2], t2, "not asked: no wait");
        assert_eq!(server.calls(), 3);
    }
}
