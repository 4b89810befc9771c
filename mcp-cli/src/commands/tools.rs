//! `mcph tools [SERVER]`: the tool catalog.

use mcp_client::McpClient;
use serde_json::{json, Value};

use crate::commands::{require_ready, warn_unavailable};
use crate::errors::CliError;
use crate::output::{self, Table};

/// Lists the tools of every ready server (warning about the others), or of one server.
pub fn run(client: &McpClient, server: Option<&str>, json: bool) -> Result<(), CliError> {
    match server {
        Some(name) => {
            require_ready(client, name)?;
        }
        None => warn_unavailable(client, "tools"),
    }
    let catalog = client.tools();
    let tools: Vec<_> = catalog
        .entries()
        .iter()
        .filter(|t| server.is_none_or(|name| t.server == name))
        .collect();
    if json {
        let list: Vec<Value> = tools
            .iter()
            .map(|t| json!({"name": t.qualified_name, "server": t.server, "tool": t.tool}))
            .collect();
        return output::print(&output::json(&list)?);
    }
    if tools.is_empty() {
        eprintln!("no tools available");
        return Ok(());
    }
    let mut table = Table::new(&["NAME", "DESCRIPTION"]);
    for t in tools {
        let description = t.tool.description.as_deref().or(t.tool.title.as_deref());
        table.row(vec![
            t.qualified_name.clone(),
            output::summary(description, 100),
        ]);
    }
    output::print(&table.render())
}
