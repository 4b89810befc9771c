//! `mcp-tasks`: the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for MCP clients,
//! beside the session engine rather than in it.
//!
//! A server may answer a `tools/call` with a task handle (`resultType: "task"`) instead of the
//! result; the client polls `tasks/get` until the task is `completed`, `failed` or `cancelled`,
//! answering its `inputRequests` with `tasks/update` on the way, or gives up with
//! `tasks/cancel`. The session (`mcp-session`) only declares the extension on every modern
//! request ([`SessionOptions::tasks`](mcp_session::SessionOptions::tasks)) and hands the handle
//! back as the call's answer; everything else is here.
//!
//! - **The follower** ([`FollowTasksLayer`] → [`TaskFollower`], `follower.rs`): a layer that
//!   follows a `tools/call` answered with a task to its end, so that
//!   [`call_tool`](mcp_core::McpServiceExt::call_tool) returns the final result as if the call
//!   had been answered at once — one deadline for all of it, input requests answered through
//!   the client's [`ClientHandler`](mcp_session::ClientHandler), and a `tasks/cancel` when it
//!   gives up. It is built with the same handler and [`SessionOptions`](mcp_session::SessionOptions)
//!   as the sessions below it. A service picked per call goes through it with
//!   [`FollowTasksLayer::call_through`]; the facade's gates (`mcp-client`) call every server's
//!   session with [`FollowTasksLayer::call_session`], so a task is followed on the session that
//!   answered with it, and a session whose server does not offer the extension is called
//!   directly, at no cost.
//! - **Polling** (`poll.rs`): `tasks/get` at the server's `pollIntervalMs` within [`MIN_POLL`]
//!   and [`MAX_POLL`], each input request answered once, one last look just before the
//!   deadline.
//! - **Abandoned tasks** (`cancel.rs`): the `tasks/cancel` of a task the follower gives up on
//!   (deadline, error, or the caller dropping the call), sent from a task the follower owns,
//!   bounded by [`CANCEL_TIMEOUT`]; [`FollowTasksLayer::flush_cancels`] waits for them.
//! - **Requests** ([`TasksExt`], `ext.rs`): `call_tool_as_task` (the handle instead of the
//!   result), `get_task`, `wait_for_task`, `update_task`, `cancel_task` on any
//!   [`McpService`](mcp_core::McpService); what a caller asks of the follower for one request
//!   ([`TaskHandling`]) is attached to its options ([`TaskOptionsExt`]).
//! - **Types** (`types.rs`): [`Task`], [`TaskStatus`], [`ToolCallOutcome`], and the
//!   extension's names.
//!
//! ```no_run
//! # async fn run(session: mcp_session::ClientSession) -> Result<(), mcp_core::Error> {
//! use std::sync::Arc;
//! use mcp_core::{Layer, McpServiceExt, RequestOptions};
//! use mcp_session::SessionOptions;
//! use mcp_tasks::{FollowTasksLayer, TasksExt, ToolCallOutcome};
//! // The handler and options the session was connected with (`with_tasks(true)`: the session
//! // declares the extension, the layer follows what the server runs as a task).
//! let options = SessionOptions::default().with_tasks(true);
//! let service = FollowTasksLayer::new(Arc::new(()), &options).layer(session);
//! // Followed to its end, whether the server runs it as a task or not.
//! let result = service.call_tool("build", None, RequestOptions::new()).await?;
//! println!("{}", result.text());
//! // Or the handle itself: to show progress, to poll later, to cancel.
//! match service.call_tool_as_task("build", None, RequestOptions::new()).await? {
//!     ToolCallOutcome::Completed(result) => println!("{}", result.text()),
//!     ToolCallOutcome::Task(task) => {
//!         println!("task {} is {}", task.task_id, task.status);
//!         let done = service.wait_for_task(&task.task_id, RequestOptions::new()).await?;
//!         println!("{}", done.into_tool_result()?.text());
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Legacy (2025-era) sessions never declare the extension, so their servers never answer with a
//! task; `tasks/*` requests to them are sent as they are (and refused by the server).

#![warn(missing_docs)]

mod cancel;
mod ext;
mod follower;
mod poll;
mod types;

pub use cancel::CANCEL_TIMEOUT;
pub use ext::{TaskHandling, TaskOptionsExt, TasksExt};
pub use follower::{FollowTasksLayer, TaskFollower};
pub use poll::{MAX_POLL, MIN_POLL};
pub use types::{
    is_task_method, Task, TaskStatus, ToolCallOutcome, NOTIFICATION_TASKS, RESULT_TYPE_TASK,
    TASKS_CANCEL, TASKS_EXTENSION, TASKS_GET, TASKS_UPDATE,
};

#[cfg(test)]
mod tests;
