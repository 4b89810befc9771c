//! The Tasks extension's types: a [`Task`] and its [`TaskStatus`], what a `tools/call` that may
//! run as a task answered ([`ToolCallOutcome`]), and the extension's names.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use mcp_core::error::{Delivery, Error, ErrorKind};
use mcp_core::jsonrpc::{ErrorObject, Payload};
use mcp_core::types::{methods, CallToolResult, Extra};
use mcp_session::ErrorCodeTable;

pub use mcp_core::types::methods::{is_task_method, TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
/// The `resultType` of a task handle.
pub use mcp_session::RESULT_TYPE_TASK;
/// The extension's identifier, in client and server capabilities (the session declares it on
/// every modern request unless [`SessionOptions::tasks`](mcp_session::SessionOptions::tasks) is
/// off).
pub use mcp_session::TASKS_EXTENSION;
/// `notifications/tasks`: a task's full state, pushed by the server.
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// In progress.
    Working,
    /// Waiting for the client: see [`Task::input_requests`].
    InputRequired,
    /// Finished; [`Task::result`] holds what the request would have returned.
    Completed,
    /// Ended by a JSON-RPC error: [`Task::error`].
    Failed,
    /// Cancelled before it finished.
    Cancelled,
    /// A status this client does not know (treated as an error when followed).
    #[serde(other)]
    Unknown,
}

impl TaskStatus {
    /// The wire value (`"unknown"` for an unknown one).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Unknown => "unknown",
        }
    }

    /// `completed`, `failed` and `cancelled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task: the handle a `tools/call` answered with (`CreateTaskResult`), or its state as
/// `tasks/get` reports it (`DetailedTask`, with the result, error or input requests its status
/// carries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's identifier, for `tasks/get`, `tasks/update` and `tasks/cancel`.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the server says about it (may be shown to the user or the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// When it last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// How long after creation the server keeps it, in milliseconds (`None`: unlimited).
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// How often the server would like to be polled, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// `completed`: what the original request returns (a `CallToolResult` for `tools/call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// `failed`: the JSON-RPC error that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// `input_required`: what the server asks, by key (each an `elicitation/create`,
    /// `sampling/createMessage` or `roots/list` request); answered with `tasks/update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
    /// Unknown members (`resultType`, `_meta`, …), preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Task {
    /// The end of a task that ran a `tools/call`: the tool's result when it completed, the
    /// server's error when it failed, an error when it was cancelled or has not ended.
    pub fn into_tool_result(self) -> Result<CallToolResult, Error> {
        self.into_result_with(&ErrorCodeTable::default())
    }

    /// [`into_tool_result`](Self::into_tool_result), classifying a failed task's error code
    /// with `table` (the session's [`SessionOptions::error_codes`](mcp_session::SessionOptions::error_codes)).
    pub fn into_result_with(self, table: &ErrorCodeTable) -> Result<CallToolResult, Error> {
        let id = self.task_id.clone();
        let result = self.into_outcome(table)?;
        serde_json::from_value(result).map_err(|e| {
            Error::protocol(format!("task {id}: invalid tools/call result: {e}"))
                .with_delivery(Delivery::Answered)
        })
    }

    /// The end of the task whatever request it ran: its `result` when it completed, else an
    /// error saying how it ended.
    pub fn into_outcome(self, table: &ErrorCodeTable) -> Result<Value, Error> {
        let id = self.task_id;
        let message = self
            .status_message
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        match self.status {
            TaskStatus::Completed => self.result.ok_or_else(|| {
                Error::protocol(format!("task {id} completed without a result"))
                    .with_delivery(Delivery::Answered)
            }),
            TaskStatus::Failed => Err(match self.error {
                Some(error) => table.error_of(error),
                None => Error::new(ErrorKind::Tool, format!("task {id} failed{message}")),
            }
            .with_delivery(Delivery::Answered)),
            TaskStatus::Cancelled => Err(Error::new(
                ErrorKind::Tool,
                format!("task {id} was cancelled{message}"),
            )
            .with_delivery(Delivery::Answered)),
            other => Err(Error::protocol(format!(
                "task {id} has not ended (status {other})"
            ))),
        }
    }
}

/// What a `tools/call` that may run as a task answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallOutcome {
    /// The server answered at once.
    Completed(CallToolResult),
    /// The server runs the call as a task.
    Task(Task),
}

impl ToolCallOutcome {
    /// Reads a `tools/call` answer that may be a task handle (`resultType: "task"`); `name` is
    /// the tool, for errors.
    pub fn from_answer(answer: Payload, name: &str) -> Result<ToolCallOutcome, Error> {
        if mcp_session::result_type(&answer).as_str() == RESULT_TYPE_TASK {
            return parse_task(answer, methods::TOOLS_CALL).map(ToolCallOutcome::Task);
        }
        CallToolResult::from_answer(answer, name).map(ToolCallOutcome::Completed)
    }

    /// Whether the tool answered at once with an `isError` result.
    pub fn is_tool_error(&self) -> bool {
        matches!(self, ToolCallOutcome::Completed(r) if r.is_error())
    }
}

/// Parses a task handle or state; `method` names the request that answered, for errors.
pub(crate) fn parse_task(answer: Payload, method: &str) -> Result<Task, Error> {
    answer.into_typed().map_err(|e| {
        Error::protocol(format!("{method}: invalid task in the answer: {e}"))
            .with_delivery(Delivery::Answered)
    })
}
