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
        return output::print(&output::json(&*result)?);
    }
    output::print(&output::render_resource_contents(&result.contents))
}

/// Reads one resource, subscribes to it, and reads and prints it again on every update, until
/// `count` updates were shown (or Ctrl-C, which the caller handles).
pub async fn watch(
    client: &McpClient,
    uri: &str,
    server: Option<&str>,
    count: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    if let Some(name) = server {
        require_ready(client, name)?;
    }
    let (updated, mut updates) = tokio::sync::mpsc::unbounded_channel();
    // Subscribed (and the observer in place) before the first read: no update falls between.
    let (server, _observer) = client
        .on_resource_update(server, uri, move |_| {
            let _ = updated.send(());
        })
        .await?;
    let started = std::time::Instant::now();
    if !show_update(client, &server, uri, 0, started, json).await? {
        return Ok(());
    }
    if !json {
        eprintln!("watching for updates (Ctrl-C to stop)");
    }
    let mut shown = 0;
    while count.is_none_or(|limit| shown < limit) {
        if updates.recv().await.is_none() {
            return Ok(());
        }
        // Several updates before we got to read cost one read.
        while updates.try_recv().is_ok() {}
        shown += 1;
        if !show_update(client, &server, uri, shown, started, json).await? {
            return Ok(());
        }
    }
    Ok(())
}

/// Reads the resource (fetched again after an update) and prints it; `false` when stdout was
/// closed.
async fn show_update(
    client: &McpClient,
    server: &str,
    uri: &str,
    update: u64,
    started: std::time::Instant,
    json: bool,
) -> Result<bool, CliError> {
    let result = client.read_resource(Some(server), uri).await?;
    if json {
        let mut line = serde_json::to_string(&json!({
            "uri": uri,
            "server": server,
            "update": update,
            "contents": result.contents,
        }))
        .map_err(|e| CliError::Other(format!("cannot write JSON: {e}")))?;
        line.push('\n');
        return output::print_or_closed(&line);
    }
    let what = if update == 0 {
        "read".to_owned()
    } else {
        format!("update {update}")
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut text = format!("[+{seconds:.1}s] {what} of {uri} ({server}):\n");
    text.push_str(&output::render_resource_contents(&result.contents));
    output::print_or_closed(&text)
}
