//! The follower: a layer that turns a `tools/call` the server runs as a task into the call's
//! result, as if the server had answered at once.
//!
//! [`TaskFollower`] (or [`FollowTasksLayer::call_through`], for a service picked per call, and
//! [`FollowTasksLayer::call_session`], for a session: only where its server offers the
//! extension) looks at every `tools/call` answer of the service it wraps. A task handle
//! (`resultType: "task"`) is followed to its end (`poll.rs`) under the call's one deadline, and
//! the caller gets the task's `result`, a `failed` task's error or a cancelled task as an error.
//! A task it abandons — the deadline passed, an error ended the following, or the caller dropped
//! the call — is cancelled (`cancel.rs`): nobody else knows its id. A call that asked for the
//! handle ([`TaskHandling::ReturnTask`]) is passed on untouched; a `tasks/get` that asked to
//! wait ([`TaskHandling::WaitForTask`]) is followed the same way but never cancelled. Every
//! other request goes straight to the service, without a box of its own.
//!
//! **How it reaches the handler.** A task's input requests (an `elicitation/create`, a
//! `sampling/createMessage`, a `roots/list`) are the client's to answer, as a server→client
//! request is. The layer is built with the same `Arc<dyn ClientHandler>` and
//! [`SessionOptions`] as the sessions it wraps, and answers through
//! [`mcp_session::answer_input_requests`] — the session's own code, so a capability the handler
//! does not declare is refused the same way, and the session's `server_request_timeout` bounds
//! each answer. Nothing travels through the service to find the handler: the sessions below may
//! come and go (a supervisor reconnecting, a pool), the handler is the client's and stays.
//!
//! **What the session keeps.** It declares the extension on every modern request
//! ([`SessionOptions::tasks`]) and accepts a task handle as a `tools/call` answer only then,
//! and only from a server that offers the extension; following is entirely here.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::Payload;
use mcp_core::service::{CallFuture, Layer, McpService, Operation, RequestOptions};
use mcp_core::types::{methods, ResultType};
use mcp_session::{ClientHandler, ClientSession, ErrorCodeTable, SessionOptions, TASKS_EXTENSION};

use crate::cancel::{AbandonedTasks, CancelGuard};
use crate::ext::{TaskHandling, TaskOptionsExt};
use crate::poll::{self, InputAnswers, Poll};
use crate::types::{parse_task, Task, RESULT_TYPE_TASK, TASKS_GET};

/// Wraps a service in a [`TaskFollower`]. Clones share the settings and the abandoned tasks'
/// cancellations ([`flush_cancels`](Self::flush_cancels)).
#[derive(Clone)]
pub struct FollowTasksLayer {
    shared: Arc<FollowerSettings>,
}

/// What the layer and its followers share.
struct FollowerSettings {
    handler: Arc<dyn ClientHandler>,
    /// The deadline of a request without one of its own (the session's `request_timeout`).
    default_timeout: Duration,
    /// How long the handler may take to answer one input request.
    input_timeout: Duration,
    /// The poll interval when the server suggests none.
    poll_interval: Duration,
    /// Classifies a failed task's error.
    error_codes: ErrorCodeTable,
    abandoned: AbandonedTasks,
}

impl FollowTasksLayer {
    /// A follower that answers input requests through `handler` and reads the session's
    /// settings from `options` (both as the sessions below it have them):
    /// [`request_timeout`](SessionOptions::request_timeout) is a call's deadline when it sets
    /// none, [`server_request_timeout`](SessionOptions::server_request_timeout) bounds each
    /// input request's answer, [`task_poll_interval`](SessionOptions::task_poll_interval) is
    /// the interval when the server suggests none, and
    /// [`error_codes`](SessionOptions::error_codes) classifies a failed task's error.
    pub fn new(handler: Arc<dyn ClientHandler>, options: &SessionOptions) -> Self {
        FollowTasksLayer {
            shared: Arc::new(FollowerSettings {
                handler,
                default_timeout: options.request_timeout,
                input_timeout: options.server_request_timeout,
                poll_interval: options.task_poll_interval,
                error_codes: options.error_codes.clone(),
                abandoned: AbandonedTasks::default(),
            }),
        }
    }

    /// Waits, at most `within`, for the `tasks/cancel` requests of abandoned tasks still under
    /// way, and gives up the rest. Call it before closing the sessions below, as a session's
    /// `close` flushes its outbox.
    pub async fn flush_cancels(&self, within: Duration) {
        self.shared.abandoned.flush(within).await;
    }
}

impl std::fmt::Debug for FollowTasksLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FollowTasksLayer")
            .field("default_timeout", &self.shared.default_timeout)
            .field("poll_interval", &self.shared.poll_interval)
            .finish_non_exhaustive()
    }
}

impl<S: McpService + 'static> Layer<S> for FollowTasksLayer {
    type Service = TaskFollower<S>;

    fn layer(&self, inner: S) -> TaskFollower<S> {
        TaskFollower {
            inner: Arc::new(inner),
            shared: self.shared.clone(),
        }
    }
}

/// A service whose `tools/call` answers are never task handles, unless the caller asked for
/// one ([`TaskHandling::ReturnTask`]): a task is followed to its end under the call's one
/// deadline and the caller gets its result, a failed task's error, or a cancelled task as an
/// error; a task it gives up on is cancelled. A `tasks/get` marked
/// [`TaskHandling::WaitForTask`] is followed the same way, and left running when the wait gives
/// up. Every other request goes to the wrapped service as it is. Made by
/// [`FollowTasksLayer`].
pub struct TaskFollower<S> {
    /// FollowerSettings with the cancellations of abandoned tasks, which go through it.
    inner: Arc<S>,
    shared: Arc<FollowerSettings>,
}

impl<S> TaskFollower<S> {
    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

/// Whether the follower cancels the task when it stops before the task ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnAbandon {
    /// Cancel it (nobody else knows the task).
    Cancel,
    /// Leave it running (the caller holds its id).
    Keep,
}

impl<S: McpService + 'static> McpService for TaskFollower<S> {
    fn call<'life0, 'async_trait>(&'life0 self, operation: Operation) -> CallFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let inner = &self.inner;
        let owned = move || -> Arc<dyn McpService> { inner.clone() };
        Following::new(&self.shared, &**inner, owned).call(operation)
    }
}

impl FollowTasksLayer {
    /// Sends `operation` to `service` through a follower, as `self.layer(service).call(operation)`
    /// would, for a service picked per call (a gate's current session): a task is followed on
    /// the service that answered with it, nothing is allocated for a request that is not a
    /// `tools/call`, and the service is cloned only when a task is followed (its cancellation
    /// goes through the clone).
    pub fn call_through<'a, S>(&'a self, service: &'a S, operation: Operation) -> CallFuture<'a>
    where
        S: McpService + Clone + 'static,
    {
        let owned = move || -> Arc<dyn McpService> { Arc::new(service.clone()) };
        Following::new(&self.shared, service, owned).call(operation)
    }

    /// [`call_through`](Self::call_through) a session whose server may answer with a task: it
    /// speaks the 2026-07-28 era and offers the Tasks extension ([`TASKS_EXTENSION`]). Any
    /// other session is called directly, where the follower would only cost (a copy of the
    /// options and subject of every `tools/call`, kept for a task: about 600 instructions a
    /// call, callgrind, `routing` bench): an extension is used only where both sides declared
    /// it, and the session refuses a task from a server that did not offer it, with an error
    /// that says so. The future keeps the session's handle (a followed call costs one more
    /// allocation than [`call_through`](Self::call_through)).
    pub fn call_session<'a>(
        &'a self,
        session: ClientSession,
        operation: Operation,
    ) -> CallFuture<'a> {
        if session.server_offers_extension(TASKS_EXTENSION) {
            Box::pin(async move { self.call_through(&session, operation).await })
        } else {
            // The future made at once, on the handle it keeps: a gate that picks the session
            // per call holds only this future, not the operation beside it.
            session.call_owned(operation)
        }
    }
}

/// One request through the follower: the layer's settings, the service below, and how to get
/// an owned handle to that service (for the `tasks/cancel` of an abandoned task, sent after the
/// request is over).
struct Following<'a, S: ?Sized, O> {
    shared: &'a FollowerSettings,
    inner: &'a S,
    owned: O,
}

impl<'a, S, O> Following<'a, S, O>
where
    S: McpService + ?Sized + 'a,
    O: Fn() -> Arc<dyn McpService> + Send + Sync + 'a,
{
    fn new(shared: &'a FollowerSettings, inner: &'a S, owned: O) -> Self {
        Following {
            shared,
            inner,
            owned,
        }
    }

    /// A `tools/call` or a waiting `tasks/get` in a box of its own; anything else is the
    /// service's own future (no box of ours).
    fn call(self, operation: Operation) -> CallFuture<'a> {
        let handling = operation.options.task_handling();
        match operation.method.as_ref() {
            methods::TOOLS_CALL if handling != Some(TaskHandling::ReturnTask) => {
                Box::pin(self.call_tool(operation))
            }
            methods::TASKS_GET if handling == Some(TaskHandling::WaitForTask) => {
                Box::pin(self.wait(operation))
            }
            _ => self.inner.call(operation),
        }
    }

    /// A `tools/call`: the answer, or the end of the task it became.
    ///
    /// The task is followed in a box of its own: this future holds only what every call needs,
    /// so boxing it (in [`call`](Self::call)) copies a few hundred bytes, not the polling
    /// loop's state (about 860 instructions a call less, callgrind, `routing` bench).
    async fn call_tool(self, operation: Operation) -> Result<Payload, Error> {
        let started = Instant::now();
        // Kept for the rare task: the polls carry the caller's options, errors name the tool.
        let options = operation.options.clone();
        let subject = operation.subject.clone();
        let answer = self.inner.call(operation).await?;
        if !is_task_handle(&answer) {
            return Ok(answer);
        }
        Box::pin(self.follow_tool_task(answer, options, subject, started)).await
    }

    /// The task a `tools/call` answered with, followed to its end.
    async fn follow_tool_task(
        self,
        answer: Payload,
        options: RequestOptions,
        subject: Option<String>,
        started: Instant,
    ) -> Result<Payload, Error> {
        let name = |e: Error| match &subject {
            Some(subject) if e.subject().is_none() => e.with_subject(subject.clone()),
            _ => e,
        };
        let task = parse_task(answer, methods::TOOLS_CALL).map_err(name)?;
        let ended = self
            .follow(
                methods::TOOLS_CALL,
                task,
                &options,
                started,
                OnAbandon::Cancel,
            )
            .await
            .map_err(name)?;
        ended
            .into_outcome(&self.shared.error_codes)
            .map(Payload::Value)
            .map_err(name)
    }

    /// A `tasks/get` that waits: the task as it ended.
    async fn wait(self, operation: Operation) -> Result<Payload, Error> {
        let started = Instant::now();
        let options = operation.options.clone();
        let task = parse_task(self.inner.call(operation).await?, TASKS_GET)?;
        let ended = self
            .follow(TASKS_GET, task, &options, started, OnAbandon::Keep)
            .await?;
        serde_json::to_value(ended)
            .map(Payload::Value)
            .map_err(|e| {
                Error::protocol(format!("{TASKS_GET}: cannot re-encode the task: {e}"))
                    .with_delivery(Delivery::Answered)
            })
    }

    /// Polls `task` until it has ended (see `poll.rs`) under the deadline of the request that
    /// began at `started`, cancelling it when it is abandoned and `on_abandon` says so.
    async fn follow(
        &self,
        method: &str,
        task: Task,
        options: &RequestOptions,
        started: Instant,
        on_abandon: OnAbandon,
    ) -> Result<Task, Error> {
        let shared = self.shared;
        let mut guard = (on_abandon == OnAbandon::Cancel)
            .then(|| CancelGuard::new(&shared.abandoned, (self.owned)(), task.task_id.clone()));
        let deadline = options.deadline_from(started, shared.default_timeout);
        let poll = Poll {
            method,
            started,
            deadline,
            options: poll::poll_options(options, deadline),
            default_interval: shared.poll_interval,
            input: Some(InputAnswers {
                handler: &*shared.handler,
                limit: shared.input_timeout,
            }),
            cancels: guard.is_some(),
        };
        let ended = poll::until_ended(self.inner, task, &poll).await;
        if let (Ok(_), Some(guard)) = (&ended, &mut guard) {
            guard.disarm();
        }
        ended.map_err(poll::marked_sent)
    }
}

/// Whether a `tools/call` answer is a task handle. Most answers are not, so a text answer is
/// parsed only when it names the type at all.
fn is_task_handle(answer: &Payload) -> bool {
    let named = match answer {
        Payload::Raw(raw) => raw.get().contains(RESULT_TYPE_QUOTED),
        Payload::Shared(shared) => shared.as_str().contains(RESULT_TYPE_QUOTED),
        // Typed payloads are complete results by contract (`Payload::Typed`).
        Payload::Typed(_) => false,
        Payload::Value(_) => true,
    };
    named
        && matches!(mcp_session::result_type(answer), ResultType::Other(t) if t == RESULT_TYPE_TASK)
}

/// [`RESULT_TYPE_TASK`] as it appears in JSON text.
const RESULT_TYPE_QUOTED: &str = "\"task\"";
