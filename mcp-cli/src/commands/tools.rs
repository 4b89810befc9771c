//! `mcph tools [SERVER]`: the tool catalog; `--llm` the list a model gets, `--watch` its
//! changes as they happen.

use std::time::Instant;

use mcp_client::{Catalog, CatalogChange, CatalogTool, LlmToolFormat, McpClient};
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
    if let Some(name) = server {
        require_ready(client, name)?;
    }
    if !json {
        run(client, server, false)?;
        eprintln!("watching for changes (Ctrl-C to stop)");
    }
    // Which server each tool belongs to, before and after a change.
    let mut before = client.tools();
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
        let after = client.tools();
        let change = only_server(change, server, &before, &after);
        before = after;
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
        if !output::print_or_closed(&text)? {
            return Ok(());
        }
    }
    Ok(())
}

/// The part of a change that concerns `server` (all of it without one): tools that are there
/// are looked up in the catalog `after` the change, removed ones in the one `before`.
fn only_server(
    mut change: CatalogChange,
    server: Option<&str>,
    before: &Catalog<CatalogTool>,
    after: &Catalog<CatalogTool>,
) -> CatalogChange {
    if let Some(name) = server {
        let of = |catalog: &Catalog<CatalogTool>, tool: &String| {
            catalog.get(tool).is_some_and(|t| t.server == name)
        };
        change.added.retain(|tool| of(after, tool));
        change.changed.retain(|tool| of(after, tool));
        change.removed.retain(|tool| of(before, tool));
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
        let tool = |server: &str, name: &str| CatalogTool {
            qualified_name: String::new(),
            server: server.into(),
            tool: serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
                .unwrap(),
        };
        // Server `a__b`'s tools start with `a__` too: the catalog says whose they are.
        let before = Catalog::build(vec![tool("b", "y"), tool("a", "z"), tool("a__b", "w")]);
        let after = Catalog::build(vec![tool("a", "x"), tool("a", "z"), tool("a__b", "w")]);
        let only_b = only_server(change.clone(), Some("b"), &before, &after);
        assert_eq!(only_b.removed, ["b__y"]);
        assert!(only_b.added.is_empty() && only_b.changed.is_empty());
        let only_a = only_server(change, Some("a"), &before, &after);
        assert_eq!(
            (only_a.added, only_a.changed),
            (vec!["a__x".to_owned()], vec!["a__z".to_owned()])
        );
        assert!(only_a.removed.is_empty());
    }
}
