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

#[cfg(feature = "pool")]
use mcp_core::McpService;
use mcp_core::{Delivery, Error, ErrorKind, Operation, Payload};
use mcp_session::ClientSession;
use tokio::time::Instant;

use super::{Placement, Router};
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
    /// The session to send on and where it is, once the server is ready (within the call's
    /// deadline). The ready case is taken before this is called, so the call's own future does
    /// not carry this one's state (it is boxed where awaited).
    async fn wait_for_session(
        &self,
        operation: &Operation,
        deadline: &mut Option<Instant>,
    ) -> Result<(ClientSession, Placement), Error> {
        let until = self.deadline(operation, deadline);
        self.supervisor
            .ready_session_at(until)
            .await
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

impl RoutedGate {
    /// One call, on the endpoint carrying the calls (see the [module docs](self)).
    pub(crate) async fn call(&self, operation: Operation) -> Result<Payload, Error> {
        let mut deadline = None;
        loop {
            // The waits are boxed: rare, and the call's future stays small (one allocation
            // from the thread cache per call).
            let (session, placement) = match self.supervisor.ready_now_at() {
                Some(ready) => ready,
                None => Box::pin(self.wait_for_session(&operation, &mut deadline)).await?,
            };
            let index = placement.endpoint;
            let Some(endpoint) = self.router.endpoint(index) else {
                return Err(Error::new(
                    ErrorKind::ServerUnavailable,
                    format!(
                        "server \"{}\" has no endpoint {index}",
                        self.router.server()
                    ),
                )
                .with_delivery(Delivery::NotSent));
            };
            if endpoint.is_down() && self.router.must_wait(index) {
                Box::pin(self.wait_for_move(index, &operation, &mut deadline)).await?;
                continue;
            }
            // Counted before the check that the endpoint still carries the calls: a move that
            // happens after the check waits for this call before it closes the session.
            let in_flight = endpoint.enter();
            if self.router.placement() != Some(placement) {
                drop(in_flight);
                tokio::task::yield_now().await;
                continue;
            }
            let Some(target) = self.target(index, session, &operation) else {
                drop(in_flight);
                continue;
            };
            let breaker = endpoint
                .breakers
                .as_ref()
                .map(|b| b.breaker_for(&operation));
            let permit = match &breaker {
                None => None,
                Some(breaker) => match breaker.try_acquire(operation.options.deadline) {
                    Ok(permit) => Some(permit),
                    Err(rejection) => {
                        drop(in_flight);
                        let server_breaker = endpoint
                            .breakers
                            .as_ref()
                            .is_some_and(|b| Arc::ptr_eq(b.server_breaker(), breaker));
                        if server_breaker && rejection.phase == mcp_resilience::BreakerPhase::Open {
                            self.router.breaker_opened(index);
                            if self.router.should_avoid(index) {
                                Box::pin(self.wait_for_move(index, &operation, &mut deadline))
                                    .await?;
                                continue;
                            }
                        }
                        return Err(rejection.to_error(breaker, &operation));
                    }
                },
            };
            if let Some(deadline) = operation.options.deadline {
                endpoint.note_deadline(self.router.since_epoch(deadline));
            }
            let started = endpoint.metrics.start_call();
            let result = match target {
                Target::Session(session) => self.tasks.call_session(&session, operation).await,
                #[cfg(feature = "pool")]
                Target::Pool(pool) => pool.call(operation).await,
            };
            endpoint.metrics.finish_call(started, result.is_ok());
            if let Some(permit) = permit {
                permit.record(&result);
            }
            drop(in_flight);
            return result.map_err(|error| self.noticed(index, error));
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
