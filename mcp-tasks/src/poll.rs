//! Following a task to its end through a service: poll `tasks/get` at the server's
//! `pollIntervalMs` (kept within [`MIN_POLL`] and [`MAX_POLL`], and always once just before the
//! deadline), answer each input request once through the client's handler and send the answers
//! with `tasks/update`, all within the request's one deadline.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use mcp_core::error::{Delivery, Error};
use mcp_core::service::{Attachments, McpService, RequestOptions};
use mcp_core::time::human_duration;
use mcp_session::ClientHandler;

use crate::ext::task_operation;
use crate::types::{parse_task, Task, TaskStatus, TASKS_GET, TASKS_UPDATE};

/// The shortest poll interval honoured, whatever the server suggests.
pub const MIN_POLL: Duration = Duration::from_millis(20);
/// The longest poll interval honoured (a task is looked at least this often, and always once
/// just before the deadline).
pub const MAX_POLL: Duration = Duration::from_secs(600);
/// How long before the deadline the last look at a task is taken.
const LAST_LOOK: Duration = Duration::from_millis(250);

/// How one task is followed.
pub(crate) struct Poll<'a> {
    /// The request the task runs, for errors.
    pub(crate) method: &'a str,
    /// When the request began, for errors.
    pub(crate) started: Instant,
    /// When the request must be over.
    pub(crate) deadline: Instant,
    /// The options of every poll and update ([`poll_options`]).
    pub(crate) options: RequestOptions,
    /// The interval when the server suggests none.
    pub(crate) default_interval: Duration,
    /// Who answers the task's input requests (none: an input request is an error).
    pub(crate) input: Option<InputAnswers<'a>>,
    /// Whether the task is cancelled when it is abandoned (said in the timeout's message).
    pub(crate) cancels: bool,
}

/// The client's handler, and how long it may take to answer one input request (the session's
/// `server_request_timeout`).
#[derive(Clone, Copy)]
pub(crate) struct InputAnswers<'a> {
    pub(crate) handler: &'a dyn ClientHandler,
    pub(crate) limit: Duration,
}

/// The caller's options for the polls and updates of a task: its progress callback, trace
/// context and timeout, under the request's deadline, with nothing attached for the follower.
pub(crate) fn poll_options(options: &RequestOptions, deadline: Instant) -> RequestOptions {
    RequestOptions {
        deadline: Some(deadline),
        attachments: Attachments::new(),
        ..options.clone()
    }
}

/// An error after the task's handle was answered says the request was sent at least: the
/// request the task runs was answered, so a failed poll must never make a retry layer send it
/// again.
pub(crate) fn marked_sent(error: Error) -> Error {
    match error.delivery() {
        None | Some(Delivery::NotSent) => error.with_delivery(Delivery::Sent),
        Some(_) => error,
    }
}

/// Polls `task` through `service` until it has ended, answering its input requests, and
/// returns it as it ended.
pub(crate) async fn until_ended<S: McpService + ?Sized>(
    service: &S,
    mut task: Task,
    poll: &Poll<'_>,
) -> Result<Task, Error> {
    let method = poll.method;
    let deadline = poll.deadline;
    let task_id = task.task_id.clone();
    let mut answered: HashSet<String> = HashSet::new();
    let mut last_look = false;
    loop {
        let mut interval = task
            .poll_interval_ms
            .map_or(poll.default_interval, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        match task.status {
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled => {
                return Ok(task);
            }
            TaskStatus::InputRequired => {
                let fresh: Map<String, Value> = task
                    .input_requests
                    .take()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if !fresh.is_empty() {
                    let Some(input) = poll.input else {
                        return Err(Error::protocol(format!(
                            "{method}: task {task_id} asks for input ({}), and nothing here can \
                             answer it: follow it through a TaskFollower (FollowTasksLayer), \
                             which holds the client's handler",
                            fresh.keys().cloned().collect::<Vec<_>>().join(", ")
                        ))
                        .with_delivery(Delivery::Answered));
                    };
                    let responses = mcp_session::answer_input_requests(
                        input.handler,
                        method,
                        &fresh,
                        input.limit,
                        Some(deadline),
                    )
                    .await?;
                    answered.extend(responses.keys().cloned());
                    let update = task_operation(
                        TASKS_UPDATE,
                        &task_id,
                        Some(("inputResponses", Value::Object(responses))),
                    )
                    .with_options(poll.options.clone());
                    service.call(update).await?;
                    // The answers may have moved the task on: look again soon.
                    interval = MIN_POLL;
                }
            }
            TaskStatus::Working => {}
            TaskStatus::Unknown => {
                return Err(Error::protocol(format!(
                    "{method}: task {task_id} has a status this client does not know"
                ))
                .with_delivery(Delivery::Answered));
            }
        }
        let wake = Instant::now() + interval;
        if wake >= deadline {
            // One last look just before the deadline, then give up.
            if last_look {
                return Err(Error::timeout(format!(
                    "{method}: task {task_id} was still {} after {}{}",
                    task.status,
                    human_duration(Instant::now() - poll.started),
                    if poll.cancels {
                        "; the server was asked to cancel it"
                    } else {
                        ""
                    }
                ))
                .with_delivery(Delivery::Sent));
            }
            last_look = true;
            let margin = LAST_LOOK.min(deadline.saturating_duration_since(Instant::now()) / 2);
            tokio::time::sleep_until(deadline - margin).await;
        } else {
            tokio::time::sleep_until(wake).await;
        }
        let get = task_operation(TASKS_GET, &task_id, None).with_options(poll.options.clone());
        let next = parse_task(service.call(get).await?, TASKS_GET)?;
        if next.task_id != task_id {
            return Err(Error::protocol(format!(
                "tasks/get for task {task_id} answered about task {}",
                next.task_id
            ))
            .with_delivery(Delivery::Answered));
        }
        task = next;
    }
}
