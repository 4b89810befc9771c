//! `mcph servers`: every configured server, its state, its breaker, how often it was
//! reconnected and the last error it had.

use mcp_client::{McpClient, ServerReport};
use serde_json::{json, Map, Value};

use crate::errors::{reason_line, CliError};
use crate::output::{self, Table};

/// Prints the status table (or JSON). Servers that are not ready do not make the command fail.
pub fn run(client: &McpClient, json: bool) -> Result<(), CliError> {
    let servers = client.servers();
    if json {
        let list: Vec<Value> = servers.iter().map(to_json).collect();
        return output::print(&output::json(&list)?);
    }
    let mut table = Table::new(&[
        "NAME",
        "STATUS",
        "TRANSPORT",
        "TOOLS",
        "BREAKER",
        "RECONNECTS",
        "SERVER",
    ]);
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
            s.status.to_string(),
            s.transport.to_owned(),
            tools,
            breaker_label(s),
            s.reconnects.to_string(),
            info,
        ]);
        if let Some(reason) = s.status.reason() {
            table.note(format!("reason: {}", reason_line(reason)));
        } else if let Some(error) = &s.last_error {
            table.note(format!("last error: {}", reason_line(error)));
        }
    }
    let mut text = table.render();
    let count = |label: &str| servers.iter().filter(|s| s.status.label() == label).count();
    let mut summary = vec![format!("{} ready", count("ready"))];
    for label in [
        "unavailable",
        "needs-auth",
        "reconnecting",
        "probing",
        "starting",
        "disabled",
        "stopped",
    ] {
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

/// Whole seconds, rounded up (an open breaker never says "0s" while it is open).
fn seconds_up(d: std::time::Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// `closed`, `open (12s)`, `half-open`, or `-` without a breaker.
fn breaker_label(s: &ServerReport) -> String {
    match s.breaker {
        None => "-".to_owned(),
        Some(mcp_client::BreakerStatus::Open { retry_in }) => {
            format!("open ({}s)", seconds_up(retry_in))
        }
        Some(other) => other.label().to_owned(),
    }
}

/// `{name, status, attempt?, reason?, transport, tools, breaker?, reconnects, lastError?,
/// pool?, server: {name, version}?, protocolVersion?}`.
pub fn to_json(s: &ServerReport) -> Value {
    let mut object = Map::new();
    object.insert("name".into(), json!(s.name));
    object.insert("status".into(), json!(s.status.label()));
    if let mcp_client::ServerStatus::Reconnecting { attempt } = &s.status {
        object.insert("attempt".into(), json!(attempt));
    }
    if let Some(reason) = s.status.reason() {
        object.insert("reason".into(), json!(reason));
    }
    object.insert("transport".into(), json!(s.transport));
    object.insert("tools".into(), json!(s.tools));
    if let Some(breaker) = &s.breaker {
        let mut b = Map::new();
        b.insert("state".into(), json!(breaker.label()));
        if let mcp_client::BreakerStatus::Open { retry_in } = breaker {
            b.insert("retryInSec".into(), json!(seconds_up(*retry_in)));
        }
        object.insert("breaker".into(), Value::Object(b));
    }
    object.insert("reconnects".into(), json!(s.reconnects));
    if let Some(error) = &s.last_error {
        object.insert("lastError".into(), json!(error));
    }
    if let Some(pool) = &s.pool {
        object.insert(
            "pool".into(),
            json!({"connections": pool.connections, "inUse": pool.in_use, "idle": pool.idle, "waits": pool.waits}),
        );
    }
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
