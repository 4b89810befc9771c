//! `mcph servers`: every configured server, its state, its breaker, how often it was
//! reconnected and the last error it had; for a server with several endpoints, one line per
//! endpoint (region, state, smoothed latency, breaker).

use mcp_client::{EndpointReport, McpClient, ServerReport};
use serde_json::{json, Map, Value};

use crate::errors::{reason_line, CliError};
use crate::output::{self, Table};

/// How long `mcph servers` waits for the first probe of every endpoint (so their states and
/// latencies are measured, not unknown).
const FIRST_PROBES: std::time::Duration = std::time::Duration::from_secs(3);

/// Prints the status table (or JSON). Servers that are not ready do not make the command fail.
pub async fn run(client: &McpClient, json: bool) -> Result<(), CliError> {
    first_probes(client).await;
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
        for endpoint in &s.endpoints {
            table.note(endpoint_line(endpoint));
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

/// Waits (up to [`FIRST_PROBES`]) until every endpoint of every routed server has been probed
/// once.
async fn first_probes(client: &McpClient) {
    let until = tokio::time::Instant::now() + FIRST_PROBES;
    loop {
        // Only servers that are up are probed.
        let ready: Vec<String> = client
            .servers()
            .into_iter()
            .filter(|s| s.status.is_ready())
            .map(|s| s.name)
            .collect();
        let probed = client
            .metrics()
            .servers
            .iter()
            .filter(|s| ready.contains(&s.name))
            .flat_map(|s| s.endpoints.iter())
            .all(|e| e.probes > 0);
        if probed || tokio::time::Instant::now() >= until {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `endpoint eu-west  active   12.3 ms  breaker closed  https://eu.example.com/mcp`, plus why
/// it is down.
fn endpoint_line(e: &EndpointReport) -> String {
    let region = e.region.as_deref().unwrap_or("-");
    let latency = e
        .latency
        .map(|l| format!("{:.1} ms", l.as_secs_f64() * 1000.0))
        .unwrap_or_else(|| "- ms".to_owned());
    let breaker = match e.breaker {
        None => "-".to_owned(),
        Some(mcp_client::BreakerStatus::Open { retry_in }) => {
            format!("open ({}s)", seconds_up(retry_in))
        }
        Some(other) => other.label().to_owned(),
    };
    let mut line = format!(
        "endpoint {region:<10} {:<8} {latency:>9}  breaker {breaker:<10} {}",
        e.state.label(),
        e.url
    );
    if let Some(why) = &e.down_reason {
        line.push_str(&format!(" ({})", reason_line(why)));
    }
    line
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
/// pool?, server: {name, version}?, protocolVersion?, endpoints?: [{url, region, state, active,
/// latencyMs, breaker, reason?}]}`.
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
        object.insert("breaker".into(), breaker_json(breaker));
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
    if !s.endpoints.is_empty() {
        let endpoints: Vec<Value> = s.endpoints.iter().map(endpoint_json).collect();
        object.insert("endpoints".into(), Value::Array(endpoints));
    }
    Value::Object(object)
}

/// A breaker: `{state, retryInSec?}`.
fn breaker_json(breaker: &mcp_client::BreakerStatus) -> Value {
    let mut b = Map::new();
    b.insert("state".into(), json!(breaker.label()));
    if let mcp_client::BreakerStatus::Open { retry_in } = breaker {
        b.insert("retryInSec".into(), json!(seconds_up(*retry_in)));
    }
    Value::Object(b)
}

/// One endpoint: `{url, region, state, active, latencyMs, breaker, reason?}` (URL redacted,
/// latency and breaker `null` when unknown or absent; the breaker as the server's).
fn endpoint_json(e: &EndpointReport) -> Value {
    let mut object = Map::new();
    object.insert("url".into(), json!(e.url));
    object.insert("region".into(), json!(e.region));
    object.insert("state".into(), json!(e.state.label()));
    object.insert("active".into(), json!(e.active));
    object.insert(
        "latencyMs".into(),
        json!(e
            .latency
            .map(|l| (l.as_secs_f64() * 1_000_000.0).round() / 1000.0)),
    );
    object.insert(
        "breaker".into(),
        e.breaker.as_ref().map_or(Value::Null, breaker_json),
    );
    if let Some(why) = &e.down_reason {
        object.insert("reason".into(), json!(why));
    }
    Value::Object(object)
}
