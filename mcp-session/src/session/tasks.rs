//! Following a task of the Tasks extension to its end (see
//! [`extensions::tasks`](crate::extensions::tasks)): poll `tasks/get` at the server's
//! `pollIntervalMs` (kept within [`MIN_POLL`] and [`MAX_POLL`], and always once just before the deadline), answer each input request once
//! through the session's handler and send the answers with `tasks/update`, all within the
//! request's one deadline.
//!
//! A task the session follows on its own (a plain `tools/call`) has nobody else who knows its
//! id, so when the deadline passes, an error ends the loop or the caller drops the call, the
//! session queues a `tasks/cancel` for it (sent by the outbox task; the answer is not awaited).
//! A task the caller waits for explicitly ([`TasksExt::wait_for_task`]) is left running: its
//! caller holds the id and may wait again.
//!
//! [`TasksExt::wait_for_task`]: crate::extensions::tasks::TasksExt::wait_for_task

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::reader::OutboxItem;
use super::{ClientSession, RequestOptions, SessionShared};
use crate::extensions::tasks::{
    parse_task, task_operation, Task, TaskStatus, TASKS_CANCEL, TASKS_GET, TASKS_UPDATE,
};
use crate::session::request::human_duration;
use mcp_core::error::{Delivery, Error};
use mcp_core::jsonrpc::{Message, Request};

/// The shortest poll interval honoured, whatever the server suggests.
pub(super) const MIN_POLL: Duration = Duration::from_millis(20);
/// The longest poll interval honoured (a task is looked at least this often, and always once
/// just before the deadline).
pub(super) const MAX_POLL: Duration = Duration::from_secs(600);
/// How long before the deadline the last look at a task is taken.
const LAST_LOOK: Duration = Duration::from_millis(250);

/// Whether the follower cancels the task when it stops before the task ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OnAbandon {
    /// Queue a `tasks/cancel` (nobody else knows the task).
    Cancel,
    /// Leave the task running (the caller holds its id).
    Keep,
}

impl ClientSession {
    /// Polls `task` until it has ended, answering its input requests, and returns it as it
    /// ended. `method` names the request the task runs, for errors.
    ///
    /// Every error says the request was sent (at least): the request the task runs was
    /// answered, so a failed poll must never make a retry layer send it again.
    pub(super) async fn follow_task(
        &self,
        method: &str,
        task: Task,
        options: &RequestOptions,
        on_abandon: OnAbandon,
    ) -> Result<Task, Error> {
        let mut guard = CancelGuard {
            shared: (on_abandon == OnAbandon::Cancel).then(|| Arc::clone(&self.shared)),
            task_id: task.task_id.clone(),
        };
        let ended = self.poll_until_ended(method, task, options, &guard).await;
        if ended.is_ok() {
            guard.disarm();
        }
        ended.map_err(|e| match e.delivery() {
            None | Some(Delivery::NotSent) => e.with_delivery(Delivery::Sent),
            Some(_) => e,
        })
    }

    async fn poll_until_ended(
        &self,
        method: &str,
        mut task: Task,
        options: &RequestOptions,
        guard: &CancelGuard,
    ) -> Result<Task, Error> {
        let started = Instant::now();
        let deadline = options.deadline_from(started, self.shared.options.request_timeout);
        let poll_options = RequestOptions {
            deadline: Some(deadline),
            wait_for_task: false,
            return_task: false,
            ..options.clone()
        };
        let task_id = task.task_id.clone();
        let mut answered: HashSet<String> = HashSet::new();
        let mut last_look = false;
        loop {
            let mut interval = task
                .poll_interval_ms
                .map_or(
                    self.shared.options.task_poll_interval,
                    Duration::from_millis,
                )
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
                        let responses = self
                            .answer_input_requests(method, &fresh, Some(deadline))
                            .await?;
                        answered.extend(responses.keys().cloned());
                        let update = task_operation(
                            TASKS_UPDATE,
                            &task_id,
                            Some(("inputResponses", Value::Object(responses))),
                        );
                        self.issue_modern(TASKS_UPDATE, update.params, poll_options.clone())
                            .await?;
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
                        human_duration(Instant::now() - started),
                        if guard.shared.is_some() {
                            "; the server was asked to cancel it"
                        } else {
                            ""
                        }
                    ))
                    .with_delivery(Delivery::Sent));
                }
                last_look = true;
                let margin = LAST_LOOK.min((deadline - Instant::now()) / 2);
                tokio::time::sleep_until(deadline - margin).await;
            } else {
                tokio::time::sleep_until(wake).await;
            }
            let get = task_operation(TASKS_GET, &task_id, None);
            let answer = self
                .issue_modern(TASKS_GET, get.params, poll_options.clone())
                .await?;
            let next = parse_task(answer, TASKS_GET)?;
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
}

/// Queues a `tasks/cancel` for a task nobody follows any more, unless disarmed.
struct CancelGuard {
    shared: Option<Arc<SessionShared>>,
    task_id: String,
}

impl CancelGuard {
    fn disarm(&mut self) {
        self.shared = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some(shared) = self.shared.take() else {
            return;
        };
        let cancel = task_operation(TASKS_CANCEL, &self.task_id, None);
        let additions = shared.meta_additions(None, true, None);
        let params = match super::meta::with_request_meta(cancel.params, &additions) {
            Ok(params) => params,
            Err(e) => {
                tracing::debug!(error = %e, "could not build tasks/cancel");
                return;
            }
        };
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(id, "cancelling an abandoned task");
        shared.queue(OutboxItem::Send(Message::Request(Request::new(
            id,
            TASKS_CANCEL,
            params,
        ))));
    }
}
