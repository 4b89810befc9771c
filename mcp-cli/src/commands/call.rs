//! `mcph call SERVER__TOOL [JSON] [--arg KEY=VALUE]...`: one tool call.

use std::sync::Arc;

use mcp_client::McpClient;
use mcp_core::RequestOptions;
use serde_json::{Map, Value};

use crate::args::tool_arguments;
use crate::commands::missing_entry;
use crate::errors::{CliError, Missing};
use crate::output::{self, Progress};

/// Calls the tool and prints its output. Dropping this future (Ctrl-C) cancels the call: the
/// session sends `notifications/cancelled` to the server.
pub async fn run(
    client: &McpClient,
    name: &str,
    json_arguments: Option<Map<String, Value>>,
    pairs: &[(String, String)],
    json: bool,
) -> Result<(), CliError> {
    if client.tools().get(name).is_none() {
        return Err(missing_entry(client, name, Missing::Tool));
    }
    let arguments = tool_arguments(json_arguments, pairs);
    let progress = Arc::new(ClearOnDrop(Progress::for_stderr()));
    let bar = progress.clone();
    let options = RequestOptions::new().on_progress(move |p| bar.0.update(p));
    let result = client.call_tool_with(name, Some(arguments), options).await;
    progress.0.clear();
    let result = result?;
    if json {
        output::print(&output::json(&result)?)?;
    } else if !result.is_error() {
        output::print(&output::render_contents(&result.content))?;
    }
    if result.is_error() {
        return Err(CliError::ToolReported {
            tool: name.to_owned(),
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
