//! [`RoutedGate`]: the innermost part of a routed server's stack (in place of the plain
//! gate and the server's breaker layer).
//!
//! Each call takes the supervisor's session — pinned to the endpoint carrying the calls — and
//! goes through that endpoint's breaker (and, for a pooled legacy-era server, its pool; else
//! the task follower, `mcp-tasks`, around the session). A call
//! never goes to an endpoint known to be down (or whose breaker is open) while another endpoint
//! can take it: it asks the supervisor to move and waits for the new session, within its own
//! deadline. What the call did is recorded on its endpoint (`mcp-metrics`), and a failure that
//! proves the endpoint unreachable (a network error on a request that never left) or opened
//! its breaker marks it down, which moves the traffic.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;
use mcp_core::service::CallFuture;
use mcp_core::{Delivery, Error, ErrorKind, Operation, Payload};
use mcp_session::ClientSession;
use tokio::time::Instant;

use super::Router;
use crate::supervisor::{Supervisor, SupervisorEvent};

/// How long a call waiting for the traffic to move looks again at whether it still must.
const RECHECK: Duration = Duration::from_millis(50);

/// The innermost part of a routed server's stack (see the [module docs](self)).
pub(crate) struct RoutedGate {
    pub(crate) supervisor: Arc<Supervisor>,
    pub(crate) router: Arc<Router>,
    pub(crate) default_timeout: Duration,
    /// The session's calls go through it: a task is followed on the endpoint's session that
    /// answered with it, counted on that endpoint until it ended.
    pub(crate) tasks: mcp_tasks::FollowTasksLayer,
    #[cfg(feature = "pool")]
    pub(crate) stack: crate::stack::StackPolicy,
}

/// Where one call goes.
enum Target {
    Session(ClientSession),
    #[cfg(feature = "pool")]
    Pool(mcp_pool::SessionPool),
}

impl RoutedGate {
    /// Waits until the server is ready (within the call's deadline).
    async fn wait_for_session(
        &self,
        operation: &Operation,
        deadline: &mut Option<Instant>,
    ) -> Result<(), Error> {
        let until = self.deadline(operation, deadline);
        self.supervisor
            .ready_session_at(until)
            .await
            .map(drop)
            .map_err(|e| operation.attach_subject(e))
    }

    fn deadline(&self, operation: &Operation, deadline: &mut Option<Instant>) -> Instant {
        *deadline.get_or_insert_with(|| {
            operation
                .options
                .deadline_from(Instant::now(), self.default_timeout)
        })
    }

    /// Waits (a little, within the deadline) for the traffic to move off endpoint `index`.
    async fn wait_for_move(
        &self,
        index: usize,
        operation: &Operation,
        deadline: &mut Option<Instant>,
    ) -> Result<(), Error> {
        self.router.reroute();
        let until = self.deadline(operation, deadline);
        let now = Instant::now();
        if now >= until {
            let name = self
                .router
                .endpoint(index)
                .map(|e| e.url.as_str())
                .unwrap_or_default();
            return Err(operation.attach_subject(
                Error::timeout(format!(
                    "server \"{}\": endpoint {name} is down and the calls were waiting to move \
                     to another endpoint (or for it to answer again); not done within the \
                     call's deadline",
                    self.router.server()
                ))
                .with_delivery(Delivery::NotSent),
            ));
        }
        self.supervisor
            .changed_before(until.min(now + RECHECK))
            .await;
        Ok(())
    }

    /// Where `operation` goes on endpoint `index` (its session, or its pool): `None` when the
    /// endpoint stopped being the active one meanwhile.
    fn target(
        &self,
        index: usize,
        session: ClientSession,
        operation: &Operation,
    ) -> Option<Target> {
        #[cfg(feature = "pool")]
        {
            let pooled = self.router.endpoint(index).is_some_and(|e| e.pooled);
            if pooled && crate::stack::goes_through_the_pool(&session, operation) {
                return self.router.pool(index, &self.stack).map(Target::Pool);
            }
        }
        let _ = (index, operation);
        Some(Target::Session(session))
    }
}

/// What the gate can do with a call now ([`RoutedGate::admit`]).
enum Admission<'a> {
    /// Send it.
    Send(Admitted<'a>),
    /// Wait for the server's session (starting, reconnecting or probing; the wait fails at once
    /// when the server is unavailable, needs credentials or is stopped).
    WaitForSession,
    /// Wait for the traffic to move off endpoint `index` (down, or its breaker open).
    WaitForMove(usize),
    /// The calls moved meanwhile: look again once other tasks ran.
    Yield,
    /// Look again at once.
    Again,
    /// The call fails.
    Fail(Error),
}

/// A call admitted on an endpoint: counted there, its breaker's permit taken.
struct Admitted<'a> {
    index: usize,
    endpoint: &'a super::Endpoint,
    target: Target,
    in_flight: super::endpoint::InFlight<'a>,
    permit: Option<mcp_resilience::BreakerPermit<'static>>,
}

impl RoutedGate {
    /// One call, on the endpoint carrying the calls (see the [module docs](self)). Admitted at
    /// once (the common case), the call's future is made now and the gate's future holds it
    /// and the endpoint's bookkeeping, not the operation; any wait is boxed: rare, and the
    /// call's future stays small. The call is admitted now (session, endpoint, breaker
    /// permit): call it where the call starts.
    pub(crate) fn call(
        &self,
        operation: Operation,
    ) -> impl std::future::Future<Output = Result<Payload, Error>> + '_ {
        match self.admit(&operation) {
            Admission::Send(admitted) => Either::Left(self.send(admitted, operation)),
            step => Either::Right(Box::pin(self.call_after(step, operation)) as CallFuture<'_>),
        }
    }

    /// The call after a first `step` that was not [`Admission::Send`]: waits and looks again
    /// until it is admitted or fails, within its deadline.
    async fn call_after(
        &self,
        mut step: Admission<'_>,
        operation: Operation,
    ) -> Result<Payload, Error> {
        let mut deadline = None;
        loop {
            match step {
                Admission::Send(admitted) => return self.send(admitted, operation).await,
                Admission::WaitForSession => {
                    self.wait_for_session(&operation, &mut deadline).await?;
                }
                Admission::WaitForMove(index) => {
                    self.wait_for_move(index, &operation, &mut deadline).await?;
                }
                Admission::Yield => tokio::task::yield_now().await,
                Admission::Again => {}
                Admission::Fail(error) => return Err(error),
            }
            step = self.admit(&operation);
        }
    }

    /// Whether `operation` can go now, and where: the supervisor's session and the endpoint
    /// carrying the calls, counted there (before the check that it still carries them: a move
    /// that happens after the check waits for this call before it closes the session), through
    /// its breaker.
    fn admit(&self, operation: &Operation) -> Admission<'_> {
        let Some((session, placement)) = self.supervisor.ready_now_at() else {
            return Admission::WaitForSession;
        };
        let index = placement.endpoint;
        let Some(endpoint) = self.router.endpoint(index) else {
            return Admission::Fail(
                Error::new(
                    ErrorKind::ServerUnavailable,
                    format!(
                        "server \"{}\" has no endpoint {index}",
                        self.router.server()
                    ),
                )
                .with_delivery(Delivery::NotSent),
            );
        };
        if endpoint.is_down() && self.router.must_wait(index) {
            return Admission::WaitForMove(index);
        }
        let in_flight = endpoint.enter();
        if self.router.placement() != Some(placement) {
            return Admission::Yield;
        }
        let Some(target) = self.target(index, session, operation) else {
            return Admission::Again;
        };
        let permit = match &endpoint.breakers {
            None => None,
            Some(breakers) => {
                let breaker = breakers.breaker_for(operation);
                match breaker.try_acquire_owned(operation.options.deadline) {
                    Ok(permit) => Some(permit),
                    Err(rejection) => {
                        drop(in_flight);
                        let server_breaker = Arc::ptr_eq(breakers.server_breaker(), &breaker);
                        if server_breaker && rejection.phase == mcp_resilience::BreakerPhase::Open {
                            self.router.breaker_opened(index);
                            if self.router.should_avoid(index) {
                                return Admission::WaitForMove(index);
                            }
                        }
                        return Admission::Fail(rejection.to_error(&breaker, operation));
                    }
                }
            }
        };
        Admission::Send(Admitted {
            index,
            endpoint,
            target,
            in_flight,
            permit,
        })
    }

    /// The admitted call: its future made at once, its outcome recorded on the endpoint.
    fn send<'a>(
        &'a self,
        admitted: Admitted<'a>,
        operation: Operation,
    ) -> impl std::future::Future<Output = Result<Payload, Error>> + 'a {
        let Admitted {
            index,
            endpoint,
            target,
            in_flight,
            permit,
        } = admitted;
        if let Some(deadline) = operation.options.deadline {
            endpoint.note_deadline(self.router.since_epoch(deadline));
        }
        let started = endpoint.metrics.start_call();
        let call = match target {
            Target::Session(session) => self.tasks.call_session(session, operation),
            #[cfg(feature = "pool")]
            Target::Pool(pool) => pool.call_owned(operation),
        };
        async move {
            let result = call.await;
            endpoint.metrics.finish_call(started, result.is_ok());
            if let Some(permit) = permit {
                permit.record(&result);
            }
            drop(in_flight);
            result.map_err(|error| self.noticed(index, error))
        }
    }
}

impl RoutedGate {
    /// What a failed call says about its endpoint. When calls must now wait for the
    /// supervisor's verdict on the endpoint (it is known down: see `Router::must_wait`), the
    /// error says to try again at once — a retry, where one is safe, waits in the gate for the
    /// move or reconnect and goes wherever the calls go next, instead of sleeping a backoff.
    fn noticed(&self, index: usize, error: Error) -> Error {
        if error.kind() == ErrorKind::Network {
            self.supervisor.tell(SupervisorEvent::Suspect);
            if error.was_never_sent() {
                self.router.endpoint_failed(index, error.message());
            }
        }
        let opened = self
            .router
            .endpoint(index)
            .is_some_and(super::Endpoint::breaker_open);
        if opened {
            self.router.breaker_opened(index);
        }
        if error.retry_after().is_none() && self.router.must_wait(index) {
            return error.with_retry_after(Duration::ZERO);
        }
        error
    }
}
