//! `mcph resources` and `mcph read URI [--server NAME]`.

use mcp_client::McpClient;
use serde_json::{json, Value};

use crate::commands::{require_ready, warn_gather_errors, warn_unavailable};
use crate::errors::CliError;
use crate::output::{self, Table};

/// Lists the resources of every ready server.
pub async fn list(client: &McpClient, json: bool) -> Result<(), CliError> {
    warn_unavailable(client, "resources");
    let gathered = client.resources().await;
    warn_gather_errors("resources/list", &gathered.errors);
    if json {
        let list: Vec<Value> = gathered
            .items
            .iter()
            .map(|r| json!({"server": r.server, "resource": r.resource}))
            .collect();
        return output::print(&output::json(&list)?);
    }
    if gathered.items.is_empty() {
        eprintln!("no resources available");
        return Ok(());
    }
    let mut table = Table::new(&["URI", "SERVER", "MIME", "NAME"]);
    for r in &gathered.items {
        let name = r.resource.title.as_deref().unwrap_or(&r.resource.name);
        table.row(vec![
            r.resource.uri.clone(),
            r.server.clone(),
            r.resource.mime_type.clone().unwrap_or_else(|| "-".into()),
            output::summary(Some(name), 60),
        ]);
    }
    output::print(&table.render())
}

/// Reads one resource.
pub async fn read(
    client: &McpClient,
    uri: &str,
    server: Option<&str>,
    json: bool,
) -> Result<(), CliError> {
    if let Some(name) = server {
        require_ready(client, name)?;
    }
    let result = client.read_resource(server, uri).await?;
    if json {
        return output::print(&output::json(&result)?);
    }
    output::print(&output::render_resource_contents(&result.contents))
}
