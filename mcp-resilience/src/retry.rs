//! Retry with backoff: a failed request is sent again when that may help (the error is
//! transient) and is safe (the request is idempotent, or provably never reached the server).
//!
//! The default schedule ([`RetryPolicy::default`]) retries at once, then waits 1 s, 2 s, 4 s and
//! 8 s (each wait but the immediate one jittered by up to ±25 %), at most 5 retries and at most
//! 30 s of waiting in all. [`RetryPolicy::minimal`] is the `minimal` profile's fixed schedule:
//! three tries, 1 s apart. No wait ever ends at or past the operation's deadline: when the next
//! one would, the last error is returned at once. An error that says when to try again
//! ([`Error::retry_after`]) is tried again then instead of at the schedule's next wait (it still
//! counts as one of the retries): the facade's router says "at once" when the next attempt goes to
//! another endpoint, since the failed one's recovery is not what it waits for.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::service::CallFuture;
use mcp_core::{Error, ErrorKind, Layer, McpService, Operation, Payload};
use tokio::time::Instant;

use crate::instant_after;

/// How the waits between attempts grow (the immediate first retry aside, see
/// [`RetryPolicy::immediate_first_retry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// `initial`, then each wait `multiplier` times the one before (saturating).
    Exponential {
        /// The first non-immediate wait.
        initial: Duration,
        /// The growth factor between consecutive waits (1 = fixed).
        multiplier: u32,
    },
    /// The same wait before every retry.
    Fixed(Duration),
}

/// When and how often [`RetryLayer`] sends a failed request again.
///
/// Which failures are retried at all is not configurable: see [`should_retry`].
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all). Default: 5.
    pub max_retries: u32,
    /// Whether the first retry goes out at once, before the backoff starts (a dropped
    /// connection is often back by then). Default: true.
    pub immediate_first_retry: bool,
    /// The waits before the other retries. Default: exponential from 1 s, doubling.
    pub backoff: Backoff,
    /// Each non-immediate wait is scaled by a random factor in `1 ± jitter`, so clients that
    /// failed together do not retry together. Clamped to `0..=1`. Default: 0.25.
    pub jitter: f64,
    /// The most time spent waiting between attempts, summed over one request: a retry whose
    /// wait would take the total past it is not made. Default: 30 s.
    pub max_total_wait: Duration,
    /// Seeds the jitter's random numbers, for reproducible schedules (tests). Default: none
    /// (seeded from the system).
    pub seed: Option<u64>,
}

impl Default for RetryPolicy {
    /// The default schedule: immediately, 1 s, 2 s, 4 s, 8 s; ±25 % jitter; 30 s of waiting.
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            immediate_first_retry: true,
            backoff: Backoff::Exponential {
                initial: Duration::from_secs(1),
                multiplier: 2,
            },
            jitter: 0.25,
            max_total_wait: Duration::from_secs(30),
            seed: None,
        }
    }
}

impl RetryPolicy {
    /// The same wait `delay` before each of `max_retries` retries, no jitter, no immediate
    /// retry.
    pub fn fixed(delay: Duration, max_retries: u32) -> Self {
        RetryPolicy {
            max_retries,
            immediate_first_retry: false,
            backoff: Backoff::Fixed(delay),
            jitter: 0.0,
            ..RetryPolicy::default()
        }
    }

    /// The `minimal` profile's policy: three tries in all, 1 s apart.
    pub fn minimal() -> Self {
        RetryPolicy::fixed(Duration::from_secs(1), 2)
    }

    /// No retries: every request is tried once.
    pub fn never() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// Sets the number of retries.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Sets the jitter fraction (clamped to `0..=1`).
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets the cap on the total wait.
    pub fn with_max_total_wait(mut self, max_total_wait: Duration) -> Self {
        self.max_total_wait = max_total_wait;
        self
    }

    /// Sets the backoff.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets whether the first retry is immediate.
    pub fn with_immediate_first_retry(mut self, immediate: bool) -> Self {
        self.immediate_first_retry = immediate;
        self
    }

    /// Seeds the jitter, for reproducible schedules.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The wait before retry number `retry` (1 = the first retry) before jitter; zero for
    /// `retry == 0`.
    pub fn nominal_delay(&self, retry: u32) -> Duration {
        if retry == 0 || (self.immediate_first_retry && retry == 1) {
            return Duration::ZERO;
        }
        // The how-many-th backoff step this is (1-based).
        let step = if self.immediate_first_retry {
            retry - 1
        } else {
            retry
        };
        match self.backoff {
            Backoff::Fixed(delay) => delay,
            Backoff::Exponential {
                initial,
                multiplier,
            } => multiplier
                .checked_pow(step - 1)
                .and_then(|factor| initial.checked_mul(factor))
                .unwrap_or(Duration::MAX),
        }
    }

    /// The jitter fraction actually applied: clamped to `0..=1`, 0 when not a number.
    pub fn effective_jitter(&self) -> f64 {
        if self.jitter.is_nan() {
            0.0
        } else {
            self.jitter.clamp(0.0, 1.0)
        }
    }

    /// The waits before each retry this policy allows, jittered with random numbers seeded from
    /// [`seed`](Self::seed) (or the system when none is set). Ends early when the next wait
    /// would take the total past [`max_total_wait`](Self::max_total_wait). The operation's
    /// deadline is not known here; [`RetryLayer`] applies it.
    pub fn delays(&self) -> Delays<'_> {
        let rng = match self.seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        self.delays_with(rng)
    }

    /// [`delays`](Self::delays) with the given random numbers.
    pub fn delays_with(&self, rng: fastrand::Rng) -> Delays<'_> {
        Delays {
            policy: self,
            retries: 0,
            waited: Duration::ZERO,
            rng,
        }
    }

    fn jittered(&self, nominal: Duration, rng: &mut fastrand::Rng) -> Duration {
        let jitter = self.effective_jitter();
        if nominal.is_zero() || jitter == 0.0 {
            // Exact: no float round trip, so a jitter-free schedule is exactly nominal.
            return nominal;
        }
        let factor = 1.0 + jitter * (2.0 * rng.f64() - 1.0);
        Duration::try_from_secs_f64(nominal.as_secs_f64() * factor).unwrap_or(nominal)
    }
}

/// The waits before each retry of one request (see [`RetryPolicy::delays`]).
#[derive(Debug)]
pub struct Delays<'a> {
    policy: &'a RetryPolicy,
    retries: u32,
    waited: Duration,
    rng: fastrand::Rng,
}

impl Delays<'_> {
    /// The sum of the waits handed out so far.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

impl Iterator for Delays<'_> {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.retries >= self.policy.max_retries {
            return None;
        }
        let nominal = self.policy.nominal_delay(self.retries + 1);
        let delay = self.policy.jittered(nominal, &mut self.rng);
        match self.waited.checked_add(delay) {
            Some(total) if total <= self.policy.max_total_wait => {
                self.retries += 1;
                self.waited = total;
                Some(delay)
            }
            _ => {
                // The cap is reached: no later (longer) wait can fit either.
                self.retries = self.policy.max_retries;
                None
            }
        }
    }
}

/// Whether failures of `kind` are ever retried: transient kinds
/// ([`ErrorKind::is_retryable`]), minus the refusals other layers decide on, which must reach
/// the caller at once — `CircuitOpen` (the breaker says when to try again), `ServerUnavailable`
/// (the supervisor gave up reconnecting) and `RateLimited` (the limiter already waited what the
/// deadline allowed). Never retried either: `ToolNotFound`, `InvalidParams`, `Auth`,
/// `PermissionDenied` and `Protocol`, which would fail the same way again.
pub fn is_retried_kind(kind: ErrorKind) -> bool {
    match kind {
        ErrorKind::ToolNotFound
        | ErrorKind::InvalidParams
        | ErrorKind::Auth
        | ErrorKind::PermissionDenied
        | ErrorKind::CircuitOpen
        | ErrorKind::ServerUnavailable
        | ErrorKind::RateLimited => false,
        other => other.is_retryable(),
    }
}

/// Whether `operation`, having failed with `error`, may be sent again: the error's kind is
/// retried ([`is_retried_kind`]) and sending again is safe — the operation is idempotent, or
/// the error proves the request never left the client. An error whose delivery is unknown
/// counts as sent, so a side-effecting `tools/call` is never run twice.
pub fn should_retry(operation: &Operation, error: &Error) -> bool {
    is_retried_kind(error.kind()) && (operation.idempotent || error.was_never_sent())
}

/// Wraps a service in a [`RetryPolicy`].
///
/// Clones share the jitter's random number generator (seeded once from the policy).
#[derive(Debug, Clone)]
pub struct RetryLayer {
    shared: Arc<RetryShared>,
}

#[derive(Debug)]
struct RetryShared {
    policy: RetryPolicy,
    /// Forked when a request's first retryable failure needs its schedule (a call that succeeds
    /// does not advance it), so a seeded layer gives a reproducible sequence of schedules for
    /// the same sequence of outcomes.
    rng: Mutex<fastrand::Rng>,
}

impl RetryLayer {
    /// A layer retrying by `policy`.
    pub fn new(policy: RetryPolicy) -> Self {
        let rng = match policy.seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        RetryLayer {
            shared: Arc::new(RetryShared {
                policy,
                rng: Mutex::new(rng),
            }),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.shared.policy
    }
}

impl Default for RetryLayer {
    fn default() -> Self {
        RetryLayer::new(RetryPolicy::default())
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = RetryService<S>;

    fn layer(&self, inner: S) -> RetryService<S> {
        RetryService {
            inner,
            layer: self.clone(),
        }
    }
}

/// A service whose failed requests are retried (see [`RetryLayer`]).
#[derive(Debug, Clone)]
pub struct RetryService<S> {
    inner: S,
    layer: RetryLayer,
}

impl<S> RetryService<S> {
    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl RetryLayer {
    /// Calls `attempt` with `operation`, and again with a copy while the failure is worth
    /// retrying and safe to retry ([`should_retry`]), waiting by the policy's schedule — what
    /// [`RetryService`] does around its inner service, for a stack that composes its policies in
    /// one future instead of a service per layer.
    pub fn around<'a, F, Fut>(
        &'a self,
        operation: Operation,
        attempt: F,
    ) -> impl Future<Output = Result<Payload, Error>> + 'a
    where
        F: FnMut(Operation) -> Fut + 'a,
        Fut: Future<Output = Result<Payload, Error>> + 'a,
    {
        // Every attempt sends a copy whose parameters are raw JSON: serialized once here (the
        // transport then writes the text as it is), cheap to copy where a value tree is not.
        // Made before the future, which so holds the one operation it copies for each attempt.
        self.shared.attempts(operation.into_replayable(), attempt)
    }
}

impl RetryShared {
    // An `async` block, not an `async fn`: the future holds the template once (an `async fn`'s
    // future keeps its arguments twice).
    #[allow(clippy::manual_async_fn)]
    fn attempts<'a, F, Fut>(
        &'a self,
        template: Operation,
        mut attempt: F,
    ) -> impl Future<Output = Result<Payload, Error>> + 'a
    where
        F: FnMut(Operation) -> Fut + 'a,
        Fut: Future<Output = Result<Payload, Error>> + 'a,
    {
        async move {
            // The schedule (and its random numbers) only once a first attempt failed: a call that
            // succeeds costs no lock.
            let mut delays = None;
            let mut tries: u32 = 1;
            loop {
                let error = match attempt(template.clone()).await {
                    Ok(result) => return Ok(result),
                    Err(error) => error,
                };
                let operation = &template;
                if !should_retry(operation, &error) {
                    return Err(error);
                }
                let delays = delays.get_or_insert_with(|| self.policy.delays_with(self.fork_rng()));
                let Some(scheduled) = delays.next() else {
                    return Err(error);
                };
                let delay = error.retry_after().unwrap_or(scheduled);
                if let Some(deadline) = operation.options.deadline {
                    // A wait that ends at (or past) the deadline leaves the next attempt no time.
                    match instant_after(Instant::now(), delay) {
                        Some(wake) if wake < deadline => {}
                        _ => return Err(error),
                    }
                }
                tries += 1;
                tracing::debug!(
                    method = %operation.method,
                    subject = operation.subject.as_deref().unwrap_or(""),
                    attempt = tries,
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    error.kind = %error.kind(),
                    "retrying MCP request"
                );
                // Not kept across the wait: the next attempt's outcome replaces it.
                drop(error);
                if !delay.is_zero() {
                    // Boxed: rare, and the call's future stays small.
                    Box::pin(tokio::time::sleep(delay)).await;
                }
            }
        }
    }

    /// The random numbers of one request's schedule, forked from the layer's (so a seeded
    /// layer gives a reproducible sequence of schedules).
    fn fork_rng(&self) -> fastrand::Rng {
        let mut shared = self
            .rng
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        shared.fork()
    }
}

// Written out instead of with `async_trait`: the boxed future is `around`'s own, not one more
// future around it holding a second copy of the operation.
impl<S: McpService> McpService for RetryService<S> {
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
    use std::time::Duration;

    use mcp_core::{Delivery, Error, ErrorKind, Layer, McpService, Operation, RequestOptions};
    use tokio::time::Instant;

    use super::*;
    use crate::test_support::{err, ok, secs, tool_call, Scripted};

    fn network_sent() -> Error {
        err(ErrorKind::Network, Delivery::Sent)
    }

    #[test]
    fn default_schedule_is_immediate_then_doubling_from_one_second() {
        let policy = RetryPolicy::default().with_jitter(0.0);
        let delays: Vec<_> = policy.delays().collect();
        assert_eq!(delays, secs(&[0, 1, 2, 4, 8]));
        assert_eq!(policy.max_retries, 5);
        assert_eq!(policy.max_total_wait, Duration::from_secs(30));
        assert_eq!(RetryPolicy::default().jitter, 0.25);
    }

    #[test]
    fn minimal_schedule_is_two_retries_one_second_apart() {
        let delays: Vec<_> = RetryPolicy::minimal().delays().collect();
        assert_eq!(delays, secs(&[1, 1]));
        assert!(RetryPolicy::never().delays().next().is_none());
    }

    #[test]
    fn total_wait_cap_cuts_the_schedule_short() {
        let long = RetryPolicy::default().with_jitter(0.0).with_max_retries(10);
        // 0+1+2+4+8 = 15 s; the next wait (16 s) would make 31 s > 30 s.
        assert_eq!(long.delays().collect::<Vec<_>>(), secs(&[0, 1, 2, 4, 8]));
        let roomier = long.clone().with_max_total_wait(Duration::from_secs(31));
        assert_eq!(
            roomier.delays().collect::<Vec<_>>(),
            secs(&[0, 1, 2, 4, 8, 16])
        );
        let tight = long.with_max_total_wait(Duration::from_secs(10));
        assert_eq!(tight.delays().collect::<Vec<_>>(), secs(&[0, 1, 2, 4]));
    }

    #[test]
    fn jittered_delays_stay_within_a_quarter_of_nominal_and_repeat_with_a_seed() {
        let nominal = secs(&[0, 1, 2, 4, 8]);
        let mut any_differs = false;
        for seed in 0..500 {
            let policy = RetryPolicy::default().with_seed(seed);
            let delays: Vec<_> = policy.delays().collect();
            assert_eq!(delays.len(), 5, "seed {seed}");
            assert_eq!(
                delays[0],
                Duration::ZERO,
                "the immediate retry is not jittered"
            );
            for (delay, nominal) in delays.iter().zip(&nominal) {
                assert!(
                    *delay >= nominal.mul_f64(0.75) && *delay <= nominal.mul_f64(1.25),
                    "seed {seed}: {delay:?} vs {nominal:?}"
                );
                any_differs |= delay != nominal;
            }
            assert!(delays.iter().sum::<Duration>() <= Duration::from_secs(30));
            assert_eq!(delays, policy.delays().collect::<Vec<_>>(), "seed {seed}");
        }
        assert!(any_differs, "jitter must change some delays");
    }

    #[test]
    fn jitter_outside_zero_to_one_is_clamped() {
        assert_eq!(
            RetryPolicy::default()
                .with_jitter(f64::NAN)
                .effective_jitter(),
            0.0
        );
        assert_eq!(
            RetryPolicy::default().with_jitter(-1.0).effective_jitter(),
            0.0
        );
        assert_eq!(
            RetryPolicy::default().with_jitter(7.0).effective_jitter(),
            1.0
        );
        let wild = RetryPolicy::default().with_jitter(7.0).with_seed(3);
        for delay in wild.delays().skip(1) {
            assert!(delay <= Duration::from_secs(16));
        }
    }

    #[test]
    fn huge_backoff_saturates_instead_of_overflowing() {
        let policy = RetryPolicy::default()
            .with_jitter(0.0)
            .with_backoff(Backoff::Exponential {
                initial: Duration::from_secs(u64::MAX / 2),
                multiplier: u32::MAX,
            })
            .with_max_total_wait(Duration::MAX);
        assert_eq!(policy.nominal_delay(40), Duration::MAX);
        // 0, then u64::MAX/2 s; the next wait cannot be added to the total.
        assert_eq!(policy.delays().count(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn failing_idempotent_call_is_retried_exactly_at_0_1_2_4_8_seconds() {
        let server = Scripted::failing(network_sent());
        let service =
            RetryLayer::new(RetryPolicy::default().with_jitter(0.0)).layer(server.clone());
        let started = Instant::now();
        let error = service
            .call(Operation::new("tools/list", None))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Network);
        assert_eq!(server.gaps(), secs(&[0, 1, 2, 4, 8]));
        assert_eq!(server.starts()[0], started);
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        assert!(server.methods().iter().all(|m| m == "tools/list"));
    }

    #[tokio::test(start_paused = true)]
    async fn jittered_retries_through_the_layer_stay_within_a_quarter_and_30_seconds() {
        let nominal = secs(&[0, 1, 2, 4, 8]);
        for seed in [1, 2, 42, 1234] {
            let server = Scripted::failing(network_sent());
            let service =
                RetryLayer::new(RetryPolicy::default().with_seed(seed)).layer(server.clone());
            service
                .call(Operation::new("ping", None))
                .await
                .unwrap_err();
            let gaps = server.gaps();
            assert_eq!(gaps.len(), 5);
            assert_eq!(gaps[0], Duration::ZERO);
            for (gap, nominal) in gaps.iter().zip(&nominal) {
                assert!(
                    *gap >= nominal.mul_f64(0.75) && *gap <= nominal.mul_f64(1.25),
                    "seed {seed}: {gap:?} vs {nominal:?}"
                );
            }
            assert!(gaps.iter().sum::<Duration>() <= Duration::from_secs(30));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn seeded_layer_repeats_its_schedules() {
        let run = || async {
            let server = Scripted::failing(network_sent());
            let service =
                RetryLayer::new(RetryPolicy::default().with_seed(9)).layer(server.clone());
            service
                .call(Operation::new("ping", None))
                .await
                .unwrap_err();
            service
                .call(Operation::new("ping", None))
                .await
                .unwrap_err();
            server.gaps()
        };
        assert_eq!(run().await, run().await);
    }

    #[tokio::test(start_paused = true)]
    async fn total_wait_cap_stops_the_retries_of_the_layer() {
        let server = Scripted::failing(network_sent());
        let policy = RetryPolicy::default()
            .with_jitter(0.0)
            .with_max_retries(10)
            .with_max_total_wait(Duration::from_secs(10));
        let service = RetryLayer::new(policy).layer(server.clone());
        let started = Instant::now();
        service
            .call(Operation::new("ping", None))
            .await
            .unwrap_err();
        assert_eq!(server.gaps(), secs(&[0, 1, 2, 4]));
        assert_eq!(started.elapsed(), Duration::from_secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn no_wait_ends_past_the_deadline_and_the_last_error_comes_at_once() {
        let server = Scripted::failing(network_sent());
        let service =
            RetryLayer::new(RetryPolicy::default().with_jitter(0.0)).layer(server.clone());
        let started = Instant::now();
        let deadline = started + Duration::from_secs(5);
        let operation = Operation::new("ping", None)
            .with_options(RequestOptions::new().with_deadline(deadline));
        let error = service.call(operation).await.unwrap_err();
        // Attempts at 0, 0, 1, 3 s; the next wait (4 s) would end at 7 s > 5 s.
        assert_eq!(server.gaps(), secs(&[0, 1, 2]));
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(error.kind(), ErrorKind::Network);
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_saying_when_to_try_again_is_tried_again_then() {
        // "At once" twice, then the schedule's own waits (its third and fourth).
        let server = Scripted::failing(network_sent());
        server.push(Err(network_sent().with_retry_after(Duration::ZERO)));
        server.push(Err(network_sent().with_retry_after(Duration::ZERO)));
        let policy = RetryPolicy::default().with_jitter(0.0).with_max_retries(4);
        let service = RetryLayer::new(policy).layer(server.clone());
        let operation = Operation::new("ping", None);
        service.call(operation).await.unwrap_err();
        assert_eq!(server.gaps(), secs(&[0, 0, 2, 4]));
        assert_eq!(server.calls(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ending_exactly_at_the_deadline_is_not_made() {
        let server = Scripted::failing(network_sent());
        let service = RetryLayer::new(RetryPolicy::minimal()).layer(server.clone());
        let deadline = Instant::now() + Duration::from_secs(1);
        let operation = Operation::new("ping", None)
            .with_options(RequestOptions::new().with_deadline(deadline));
        service.call(operation).await.unwrap_err();
        assert_eq!(server.calls(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn side_effecting_tool_call_is_not_resent_after_a_sent_or_unknown_error() {
        for error in [
            network_sent(),
            err(ErrorKind::Timeout, Delivery::Sent),
            Error::network("connection reset"), // delivery unknown: treated as sent
        ] {
            let server = Scripted::failing(error);
            let service = RetryLayer::default().layer(server.clone());
            let result = service.call(tool_call("delete_repo")).await;
            assert!(result.is_err());
            assert_eq!(
                server.calls(),
                1,
                "a tools/call that may have run is sent once"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn side_effecting_tool_call_is_retried_when_the_error_was_never_sent() {
        let server = Scripted::new()
            .then(Err(err(ErrorKind::Network, Delivery::NotSent)))
            .then(Err(err(ErrorKind::Network, Delivery::NotSent)))
            .then(ok());
        let service =
            RetryLayer::new(RetryPolicy::default().with_jitter(0.0)).layer(server.clone());
        let result = service.call(tool_call("delete_repo")).await;
        assert!(result.is_ok());
        assert_eq!(server.gaps(), secs(&[0, 1]));
        assert!(server
            .subjects()
            .iter()
            .all(|s| s.as_deref() == Some("delete_repo")));
    }

    #[tokio::test(start_paused = true)]
    async fn tool_call_marked_idempotent_is_retried_after_a_sent_error() {
        let server = Scripted::new().then(Err(network_sent())).then(ok());
        let service = RetryLayer::default().layer(server.clone());
        let result = service
            .call(tool_call("get_issue").with_idempotent(true))
            .await;
        assert!(result.is_ok());
        assert_eq!(server.calls(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn non_retried_kinds_fail_at_once_even_when_safe_to_resend() {
        for kind in [
            ErrorKind::ToolNotFound,
            ErrorKind::InvalidParams,
            ErrorKind::Auth,
            ErrorKind::PermissionDenied,
            ErrorKind::Protocol,
            ErrorKind::CircuitOpen,
            ErrorKind::ServerUnavailable,
            ErrorKind::RateLimited,
        ] {
            let server = Scripted::failing(err(kind, Delivery::NotSent));
            let service = RetryLayer::default().layer(server.clone());
            let started = Instant::now();
            let error = service
                .call(Operation::new("ping", None))
                .await
                .unwrap_err();
            assert_eq!(error.kind(), kind);
            assert_eq!(server.calls(), 1, "{kind} must not be retried");
            assert_eq!(
                started.elapsed(),
                Duration::ZERO,
                "{kind} must fail at once"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn transient_kinds_are_retried() {
        for kind in [
            ErrorKind::Network,
            ErrorKind::Timeout,
            ErrorKind::Tool,
            ErrorKind::Resource,
            ErrorKind::StaleCache,
        ] {
            let server = Scripted::new()
                .then(Err(err(kind, Delivery::Sent)))
                .then(ok());
            let service = RetryLayer::default().layer(server.clone());
            assert!(service.call(Operation::new("ping", None)).await.is_ok());
            assert_eq!(server.calls(), 2, "{kind} must be retried");
        }
    }

    #[test]
    fn retry_rule_matches_the_taxonomy() {
        let retried: Vec<_> = ErrorKind::ALL
            .into_iter()
            .filter(|k| is_retried_kind(*k))
            .collect();
        assert_eq!(
            retried,
            [
                ErrorKind::Network,
                ErrorKind::Timeout,
                ErrorKind::Tool,
                ErrorKind::Resource,
                ErrorKind::StaleCache,
            ]
        );
        let sent = network_sent();
        assert!(should_retry(&Operation::new("ping", None), &sent));
        assert!(!should_retry(&tool_call("x"), &sent));
        assert!(should_retry(
            &tool_call("x"),
            &err(ErrorKind::Network, Delivery::NotSent)
        ));
        assert!(!should_retry(
            &tool_call("x"),
            &err(ErrorKind::Tool, Delivery::Answered)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn minimal_policy_tries_three_times_one_second_apart() {
        let server = Scripted::failing(network_sent());
        let service = RetryLayer::new(RetryPolicy::minimal()).layer(server.clone());
        service
            .call(Operation::new("ping", None))
            .await
            .unwrap_err();
        assert_eq!(server.gaps(), secs(&[1, 1]));
    }

    #[tokio::test(start_paused = true)]
    async fn success_is_returned_without_retrying() {
        let server = Scripted::new().then(ok());
        let service = RetryLayer::default().layer(server.clone());
        assert!(service.call(Operation::new("ping", None)).await.is_ok());
        assert_eq!(server.calls(), 1);
    }
}
