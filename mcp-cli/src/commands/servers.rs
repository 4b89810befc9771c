//! `mcph servers`: every configured server and its state.

use mcp_client::{McpClient, ServerReport, ServerStatus};
use serde_json::{json, Map, Value};

use crate::errors::{reason_line, CliError};
use crate::output::{self, Table};

/// Prints the status table (or JSON). Failed servers do not make the command fail.
pub fn run(client: &McpClient, json: bool) -> Result<(), CliError> {
    let servers = client.servers();
    if json {
        let list: Vec<Value> = servers.iter().map(to_json).collect();
        return output::print(&output::json(&list)?);
    }
    let mut table = Table::new(&["NAME", "STATUS", "TRANSPORT", "TOOLS", "SERVER"]);
    for s in &servers {
        let info = s
            .server_info
            .as_ref()
            .map(|i| format!("{} {}", i.name, i.version))
            .unwrap_or_else(|| "-".to_owned());
        let tools = if s.status.is_ready() {
            s.tools.to_string()
        } else {
            "-".to_owned()
        };
        table.row(vec![
            s.name.clone(),
            s.status.label().to_owned(),
            s.transport.to_owned(),
            tools,
            info,
        ]);
        if let ServerStatus::Failed { reason } = &s.status {
            table.note(format!("reason: {}", reason_line(reason)));
        }
    }
    let mut text = table.render();
    let count = |label: &str| servers.iter().filter(|s| s.status.label() == label).count();
    let mut summary = vec![format!("{} ready", count("ready"))];
    for label in ["failed", "disabled", "starting"] {
        let n = count(label);
        if n > 0 {
            summary.push(format!("{n} {label}"));
        }
    }
    text.push_str(&format!(
        "\n{} server{}: {}\n",
        servers.len(),
        if servers.len() == 1 { "" } else { "s" },
        summary.join(", ")
    ));
    output::print(&text)
}

/// `{name, status, reason?, transport, tools, server: {name, version}?, protocolVersion?}`.
pub fn to_json(s: &ServerReport) -> Value {
    let mut object = Map::new();
    object.insert("name".into(), json!(s.name));
    object.insert("status".into(), json!(s.status.label()));
    if let ServerStatus::Failed { reason } = &s.status {
        object.insert("reason".into(), json!(reason));
    }
    object.insert("transport".into(), json!(s.transport));
    object.insert("tools".into(), json!(s.tools));
    if let Some(info) = &s.server_info {
        object.insert(
            "server".into(),
            json!({"name": info.name, "version": info.version}),
        );
    }
    if let Some(version) = &s.protocol_version {
        object.insert("protocolVersion".into(), json!(version.to_string()));
    }
    Value::Object(object)
}
