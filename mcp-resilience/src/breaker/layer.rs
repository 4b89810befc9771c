//! [`CircuitBreakerLayer`]: the server's breaker and, per tool, one breaker each, as a
//! [`Layer`] whose [`CircuitBreakerService`] asks the right breaker before every call.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use mcp_core::service::CallFuture;
use mcp_core::{Error, Layer, McpService, Operation, Payload};

use super::{BreakerPolicy, CircuitBreaker};

/// How many per-tool breakers one layer creates; tools seen after that share the server's
/// breaker (tool names come from callers, so the map must not grow without bound).
const MAX_TOOL_BREAKERS: usize = 1024;

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

impl CircuitBreakerLayer {
    /// Asks `operation`'s breaker for a permit, calls `next` with it when given one, and
    /// records the outcome — what [`CircuitBreakerService`] does around its inner service, for
    /// a stack that composes its policies in one future instead of a service per layer. The
    /// permit is asked for now: call it where the call starts.
    pub fn around<F, Fut>(&self, operation: Operation, next: F) -> GuardedCall<Fut>
    where
        F: FnOnce(Operation) -> Fut,
        Fut: Future<Output = Result<Payload, Error>>,
    {
        let breaker = self.breaker_for(&operation);
        match breaker.acquire_into(operation.options.deadline) {
            Ok(permit) => GuardedCall {
                state: GuardedState::Admitted {
                    inner: next(operation),
                    permit: Some(permit),
                },
            },
            Err((breaker, rejection)) => GuardedCall {
                state: GuardedState::Refused {
                    error: Some(rejection.to_error(&breaker, &operation)),
                },
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`CircuitBreakerLayer::around`]: the call the breaker let through, its
    /// outcome reported when it ends (dropped unfinished, the permit decides: see
    /// [`BreakerPermit`](super::BreakerPermit)); or the breaker's refusal.
    #[must_use = "futures do nothing unless polled"]
    pub struct GuardedCall<F> {
        #[pin]
        state: GuardedState<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = GuardedProjection]
    enum GuardedState<F> {
        Admitted {
            #[pin]
            inner: F,
            permit: Option<super::BreakerPermit<'static>>,
        },
        Refused { error: Option<Error> },
    }
}

impl<F> fmt::Debug for GuardedCall<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            GuardedState::Admitted {
                permit: Some(_), ..
            } => "admitted",
            GuardedState::Admitted { permit: None, .. } => "completed",
            GuardedState::Refused { error: Some(_) } => "refused",
            GuardedState::Refused { error: None } => "completed",
        };
        f.debug_struct("GuardedCall")
            .field("state", &state)
            .finish()
    }
}

/// What a [`GuardedCall`] polled again after it completed answers (a caller's mistake).
fn polled_after_completion() -> Error {
    Error::new(
        mcp_core::ErrorKind::Protocol,
        "CircuitBreakerLayer::around's future was polled after it completed",
    )
    .with_delivery(mcp_core::Delivery::NotSent)
}

impl<F: Future<Output = Result<Payload, Error>>> Future for GuardedCall<F> {
    type Output = Result<Payload, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            GuardedProjection::Admitted { inner, permit } => {
                // The permit is taken when the call ends: none left means it ended already.
                if permit.is_none() {
                    return Poll::Ready(Err(polled_after_completion()));
                }
                let result = ready!(inner.poll(cx));
                if let Some(permit) = permit.take() {
                    permit.record(&result);
                }
                Poll::Ready(result)
            }
            GuardedProjection::Refused { error } => {
                Poll::Ready(Err(error.take().unwrap_or_else(polled_after_completion)))
            }
        }
    }
}

impl<S: McpService> McpService for CircuitBreakerService<S> {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // The permit is asked for once polled, as the call starts.
        Box::pin(async move {
            self.breakers
                .around(operation, |operation| self.inner.call(operation))
                .await
        })
    }
}
