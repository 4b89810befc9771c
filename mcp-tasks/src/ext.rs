//! The Tasks extension's requests on any [`McpService`], and what a caller asks of the
//! [`TaskFollower`](crate::TaskFollower) for one request ([`TaskHandling`], attached to the
//! request's options).

use std::future::Future;

use serde_json::{Map, Value};
use tokio::time::Instant;

use mcp_core::error::Error;
use mcp_core::jsonrpc::Payload;
use mcp_core::service::{McpService, Operation, RequestOptions};
use mcp_session::SessionOptions;

use crate::poll::{self, Poll};
use crate::types::{parse_task, Task, ToolCallOutcome, TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};

/// What a caller asks of the [`TaskFollower`](crate::TaskFollower) for one request, attached
/// to the request's options ([`RequestOptions::attachments`]); [`TasksExt`] attaches it, the
/// follower reads it, and every other layer (the session included) carries it on untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskHandling {
    /// A `tools/call` the server runs as a task answers with the task handle (a
    /// `CreateTaskResult`) instead of being followed to its end.
    ReturnTask,
    /// A `tasks/get` answers only once the task has ended: the follower polls it (and answers
    /// its input requests) within the request's deadline, and leaves it running when the wait
    /// gives up (the caller holds its id and may wait again).
    WaitForTask,
}

/// [`TaskHandling`] on [`RequestOptions`].
pub trait TaskOptionsExt {
    /// Attaches [`TaskHandling::ReturnTask`].
    fn returning_task(self) -> Self;
    /// Attaches [`TaskHandling::WaitForTask`].
    fn waiting_for_task(self) -> Self;
    /// What is attached, if anything.
    fn task_handling(&self) -> Option<TaskHandling>;
}

impl TaskOptionsExt for RequestOptions {
    fn returning_task(self) -> Self {
        self.with_attachment(TaskHandling::ReturnTask)
    }

    fn waiting_for_task(self) -> Self {
        self.with_attachment(TaskHandling::WaitForTask)
    }

    fn task_handling(&self) -> Option<TaskHandling> {
        self.attachments.get::<TaskHandling>().copied()
    }
}

/// The Tasks extension's requests, on any [`McpService`] (a session, or a stack of layers
/// around one — with a [`TaskFollower`](crate::TaskFollower) in it, for `tools/call` to be
/// followed and input requests answered).
pub trait TasksExt: McpService {
    /// `tools/call`, handing back the task when the server runs the call as one (instead of
    /// the follower following it to the end).
    fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Option<Value>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<ToolCallOutcome, Error>> + Send {
        let operation =
            Operation::call_tool(name, arguments).with_options(options.returning_task());
        async move { ToolCallOutcome::from_answer(self.call(operation).await?, name) }
    }

    /// `tasks/get`: the task's current state.
    fn get_task(
        &self,
        task_id: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Task, Error>> + Send {
        let operation = task_operation(TASKS_GET, task_id, None).with_options(options);
        async move { parse_task(self.call(operation).await?, TASKS_GET) }
    }

    /// Polls the task until it has ended (honouring its `pollIntervalMs`, answering its input
    /// requests through the client's handler), within the request's deadline, and leaves it
    /// running when the wait gives up. The task is returned as it ended: see
    /// [`Task::into_tool_result`].
    ///
    /// The [`TaskFollower`](crate::TaskFollower) of the stack does the waiting (it holds the
    /// handler). On a service without one the task is polled through the service itself, with
    /// [`SessionOptions`]' default timeout and interval; an input request then fails the wait,
    /// since nothing here can answer it.
    fn wait_for_task(
        &self,
        task_id: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<Task, Error>> + Send {
        // Not a pure read (it answers the task's input requests): never repeated by a retry.
        let operation = task_operation(TASKS_GET, task_id, None)
            .with_options(options.clone().waiting_for_task())
            .with_idempotent(false);
        async move {
            let started = Instant::now();
            let task = parse_task(self.call(operation).await?, TASKS_GET)?;
            if task.status.is_terminal() {
                return Ok(task);
            }
            // Not ended: no follower waited for it.
            let defaults = SessionOptions::default();
            let deadline = options.deadline_from(started, defaults.request_timeout);
            let poll = Poll {
                method: TASKS_GET,
                started,
                deadline,
                options: poll::poll_options(&options, deadline),
                default_interval: defaults.task_poll_interval,
                input: None,
                cancels: false,
            };
            poll::until_ended(self, task, &poll)
                .await
                .map_err(poll::marked_sent)
        }
    }

    /// `tasks/update`: answers to the task's input requests, by their keys.
    fn update_task(
        &self,
        task_id: &str,
        input_responses: Map<String, Value>,
        options: RequestOptions,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let operation = task_operation(
            TASKS_UPDATE,
            task_id,
            Some(("inputResponses", Value::Object(input_responses))),
        )
        .with_options(options);
        async move { self.call(operation).await.map(|_| ()) }
    }

    /// `tasks/cancel`: asks the server to stop the task. Cooperative: the task may still end
    /// another way; [`get_task`](Self::get_task) tells.
    fn cancel_task(
        &self,
        task_id: &str,
        options: RequestOptions,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let operation = task_operation(TASKS_CANCEL, task_id, None).with_options(options);
        async move { self.call(operation).await.map(|_| ()) }
    }
}

impl<S: McpService + ?Sized> TasksExt for S {}

/// A `tasks/*` request about `task_id`. No subject: per-subject policies (breakers, metrics)
/// are per tool, and task ids are many.
pub(crate) fn task_operation(
    method: &'static str,
    task_id: &str,
    extra: Option<(&str, Value)>,
) -> Operation {
    let mut params = Map::with_capacity(2);
    params.insert("taskId".into(), Value::String(task_id.to_owned()));
    if let Some((key, value)) = extra {
        params.insert(key.into(), value);
    }
    Operation::new(method, Some(Payload::Value(Value::Object(params))))
}
