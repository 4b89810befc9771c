//! `mcph call SERVER__TOOL [JSON] [--arg KEY=VALUE]... [--task [--no-wait]] [--timeout SECS]`:
//! one tool call.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::tasks::ToolCallOutcome;
use mcp_client::McpClient;
use mcp_core::types::CallToolResult;
use mcp_core::RequestOptions;
use serde_json::{Map, Value};

use crate::args::tool_arguments;
use crate::commands::missing_entry;
use crate::errors::{CliError, Missing};
use crate::output::{self, Progress};

/// How `mcph call` runs.
pub struct CallMode {
    /// `--task`: handle a task the server makes of the call.
    pub task: bool,
    /// `--no-wait`: print the task and return.
    pub no_wait: bool,
    /// `--timeout`.
    pub timeout: Option<Duration>,
}

/// Calls the tool and prints its output. Dropping this future (Ctrl-C) cancels the call: the
/// session sends `notifications/cancelled` to the server (or the stack's task follower
/// `tasks/cancel` for a task it was following).
pub async fn run(
    client: &McpClient,
    name: &str,
    json_arguments: Option<Map<String, Value>>,
    pairs: &[(String, String)],
    mode: CallMode,
    json: bool,
) -> Result<(), CliError> {
    let Some(server) = client.tools().get(name).map(|t| t.server.clone()) else {
        return Err(missing_entry(client, name, Missing::Tool));
    };
    let arguments = tool_arguments(json_arguments, pairs);
    let progress = Arc::new(ClearOnDrop(Progress::for_stderr()));
    let bar = progress.clone();
    let mut options = RequestOptions::new().on_progress(move |p| bar.0.update(p));
    if let Some(timeout) = mode.timeout {
        // One deadline for the call and the wait for its task.
        options = options.with_deadline(tokio::time::Instant::now() + timeout);
    }
    let result = if mode.task {
        let outcome = client
            .call_tool_as_task(name, Some(arguments), options.clone())
            .await;
        progress.0.clear();
        match outcome? {
            ToolCallOutcome::Completed(result) => result,
            ToolCallOutcome::Task(task) if mode.no_wait => {
                return crate::commands::task::print_task(&server, &task, json);
            }
            ToolCallOutcome::Task(task) => {
                output::note(&crate::commands::task::status_line(&server, &task));
                let ended =
                    crate::commands::task::wait(client, &server, &task.task_id, options).await?;
                output::note(&crate::commands::task::status_line(&server, &ended));
                ended.into_tool_result().map_err(|e| e.with_subject(name))?
            }
        }
    } else {
        let result = client.call_tool_with(name, Some(arguments), options).await;
        progress.0.clear();
        result?
    };
    print_result(name, &result, json)
}

/// Prints a tool's result (text, or the JSON document); an `isError` result is an error.
pub fn print_result(tool: &str, result: &CallToolResult, json: bool) -> Result<(), CliError> {
    if json {
        output::print(&output::json(result)?)?;
    } else if !result.is_error() {
        output::print(&output::render_contents(&result.content))?;
    }
    if result.is_error() {
        return Err(CliError::ToolReported {
            tool: tool.to_owned(),
            text: output::render_contents(&result.content),
        });
    }
    Ok(())
}

/// Erases the progress bar however the call ends (including Ctrl-C).
struct ClearOnDrop(Progress);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.clear();
    }
}
