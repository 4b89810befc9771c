//! `mcph tools [SERVER]`: the tool catalog; `--llm` the list a model gets, `--watch` its
//! changes as they happen.

use std::time::Instant;

use mcp_client::{CatalogChange, LlmToolFormat, McpClient};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

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

/// Prints the model-ready tool list: the exact bytes, one line.
pub fn llm(client: &McpClient, format: LlmToolFormat) -> Result<(), CliError> {
    warn_unavailable(client, "tools");
    let mut text = client.llm_tools(format).to_json();
    text.push('\n');
    output::print(&text)
}

/// Prints the tools, then every change of the list (of every server, or of one), until
/// `count` changes were shown (or Ctrl-C, which the caller handles).
pub async fn watch(
    client: &McpClient,
    server: Option<&str>,
    count: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    // Subscribed before the first listing, so no change falls between the two.
    let mut changes = client.catalog_changes();
    if !json {
        run(client, server, false)?;
        eprintln!("watching for changes (Ctrl-C to stop)");
    }
    let started = Instant::now();
    let mut shown = 0;
    while count.is_none_or(|limit| shown < limit) {
        let change = match changes.recv().await {
            Ok(change) => change,
            Err(RecvError::Lagged(missed)) => {
                eprintln!("note: {missed} changes came too fast to show");
                continue;
            }
            Err(RecvError::Closed) => return Ok(()),
        };
        let change = only_server(change, server);
        if change.is_empty() {
            continue;
        }
        shown += 1;
        let text = if json {
            let mut line = serde_json::to_string(&json!({
                "added": change.added,
                "removed": change.removed,
                "changed": change.changed,
            }))
            .map_err(|e| CliError::Other(format!("cannot write JSON: {e}")))?;
            line.push('\n');
            line
        } else {
            diff_lines(&change, started.elapsed().as_secs_f64())
        };
        output::print(&text)?;
    }
    Ok(())
}

/// The part of a change that concerns `server` (all of it without one).
fn only_server(mut change: CatalogChange, server: Option<&str>) -> CatalogChange {
    if let Some(name) = server {
        let prefix = crate::commands::qualified_prefix(name);
        for list in [&mut change.added, &mut change.removed, &mut change.changed] {
            list.retain(|tool| tool.starts_with(&prefix));
        }
    }
    change
}

/// `[+1.2s] + server__tool` lines: `+` added, `-` removed, `~` changed.
fn diff_lines(change: &CatalogChange, seconds: f64) -> String {
    let mut text = String::new();
    for (sign, names) in [
        ("+", &change.added),
        ("-", &change.removed),
        ("~", &change.changed),
    ] {
        for name in names {
            text.push_str(&format!("[+{seconds:.1}s] {sign} {name}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_is_one_line_per_tool() {
        let change = CatalogChange {
            added: vec!["a__x".into()],
            removed: vec!["b__y".into()],
            changed: vec!["a__z".into()],
        };
        assert_eq!(
            diff_lines(&change, 1.25),
            "[+1.2s] + a__x\n[+1.2s] - b__y\n[+1.2s] ~ a__z\n"
        );
        let only_b = only_server(change, Some("b"));
        assert_eq!(only_b.removed, ["b__y"]);
        assert!(only_b.added.is_empty() && only_b.changed.is_empty());
    }
}
