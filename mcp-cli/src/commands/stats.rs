//! `mcph stats`: calls through each server's full call stack (timeout, retry, breaker, pool …)
//! and shows what the client's metrics saw — per server and per operation: calls, QPS,
//! p50/p99, errors by kind, breaker, pool, cache hits. In a terminal the view is redrawn in
//! place every interval; `--json` prints one snapshot per line; `--once` prints one snapshot
//! after a short warm-up and exits. `--web ADDR` serves the operations panel
//! ([`mcp_gateway::admin`]) over the same client while it runs, `--prometheus ADDR` the
//! metrics alone.

use std::io::IsTerminal;
use std::time::Duration;

use mcp_client::metrics::{LatencySummary, MetricsSnapshot, ServerSnapshot};
use mcp_client::McpClient;
use mcp_core::{McpServiceExt, RequestOptions};
use serde_json::Value;

use crate::commands::warn_unavailable;
use crate::errors::CliError;
use crate::output::{self, Table};

/// What `mcph stats` does.
#[derive(Debug, Clone)]
pub struct StatsOptions {
    /// The tool to call (a qualified name) and its arguments; without one, every ready server
    /// is pinged through its stack.
    pub call: Option<(String, Value)>,
    /// Calls (or ping rounds) per second.
    pub rate: u32,
    /// How often the view is redrawn.
    pub interval: Duration,
    /// Print one snapshot after `warmup` calls and stop.
    pub once: bool,
    /// Calls (or ping rounds) before the one snapshot of `--once`.
    pub warmup: u32,
    /// Serve `GET /metrics` for Prometheus here while running (loopback only).
    pub prometheus: Option<std::net::SocketAddr>,
    /// Serve the operations panel here while running (loopback only), sampled every
    /// `interval`.
    pub web: Option<std::net::SocketAddr>,
}

/// Runs until Ctrl-C (handled by the caller), or once.
pub async fn run(client: &McpClient, options: StatsOptions, json: bool) -> Result<(), CliError> {
    warn_unavailable(client, "stats");
    if let Some((name, _)) = &options.call {
        if client.tools().get(name).is_none() {
            return Err(crate::commands::missing_entry(
                client,
                name,
                crate::commands::Missing::Tool,
            ));
        }
    }
    let pause = Duration::from_secs_f64(1.0 / f64::from(options.rate.max(1)));
    if options.once {
        for _ in 0..options.warmup.max(1) {
            one_round(client, &options).await;
            tokio::time::sleep(pause).await;
        }
        return show(&client.metrics(), json, false).map(|_| ());
    }
    // Owned here: stops when the command ends.
    let _endpoint = match options.prometheus {
        Some(addr) => Some(serve_prometheus(client, addr).await?),
        None => None,
    };
    // Owned here too: the panel and its connections end with the command.
    let _panel = match options.web {
        Some(addr) => Some(serve_panel(client, addr, options.interval).await?),
        None => None,
    };
    let live = !json && std::io::stdout().is_terminal();
    // The calls run on their own (a slow server must not hold up the view), owned here:
    // aborted when the command ends.
    let caller = {
        let client = client.clone();
        let options = options.clone();
        tokio::spawn(async move {
            let mut calls = tokio::time::interval(pause);
            // A round slower than the pause delays the next one; no burst to catch up.
            calls.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                calls.tick().await;
                one_round(&client, &options).await;
            }
        })
    };
    let _caller = AbortOnDrop(caller);
    let mut redraw = tokio::time::interval(options.interval);
    redraw.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        redraw.tick().await;
        if !show(&client.metrics(), json, live)? {
            // Nobody reads the output any more.
            return Ok(());
        }
    }
}

/// Aborts the task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves the client's metrics for Prometheus on a loopback address.
async fn serve_prometheus(
    client: &McpClient,
    addr: std::net::SocketAddr,
) -> Result<mcp_client::metrics::PrometheusEndpoint, CliError> {
    if !addr.ip().is_loopback() {
        return Err(CliError::Other(format!(
            "refusing to serve metrics on {addr}, which is beyond loopback: listen on 127.0.0.1 \
             (or ::1) and put a proxy in front to expose them"
        )));
    }
    let endpoint =
        mcp_client::metrics::PrometheusEndpoint::serve(client.metrics_registry().clone(), addr)
            .await
            .map_err(|e| {
                CliError::Other(format!("cannot serve Prometheus metrics on {addr}: {e}"))
            })?;
    eprintln!(
        "serving Prometheus metrics at http://{}/metrics",
        endpoint.local_addr()
    );
    Ok(endpoint)
}

/// Serves the operations panel over the client on a loopback address, sampled every
/// `interval`; prints its URL on stderr.
async fn serve_panel(
    client: &McpClient,
    addr: std::net::SocketAddr,
    interval: Duration,
) -> Result<mcp_gateway::admin::AdminHandle, CliError> {
    use mcp_gateway::admin::{AdminOptions, AdminPanel};
    let options = AdminOptions::default().with_interval(interval);
    let panel = AdminPanel::bind(addr, client.clone(), options)
        .await
        .map_err(|e| CliError::Other(e.to_string()))?;
    eprintln!(
        "serving the operations panel at {} (Ctrl-C to stop)",
        panel.url()
    );
    Ok(panel)
}

/// One call of the tool, or one ping of every ready server, through the call stacks; failures
/// are what the view counts, not errors of the command.
async fn one_round(client: &McpClient, options: &StatsOptions) {
    match &options.call {
        Some((name, arguments)) => {
            let _ = client.call_tool(name, Some(arguments.clone())).await;
        }
        None => {
            for report in client.servers() {
                if !report.status.is_ready() {
                    continue;
                }
                if let Some(service) = client.service(&report.name) {
                    let _ = service.ping(RequestOptions::new()).await;
                }
            }
        }
    }
}

/// Prints a snapshot; `false` when stdout was closed.
fn show(snapshot: &MetricsSnapshot, json: bool, live: bool) -> Result<bool, CliError> {
    if json {
        let mut line = serde_json::to_string(snapshot)
            .map_err(|e| CliError::Other(format!("cannot write JSON: {e}")))?;
        line.push('\n');
        return output::print_or_closed(&line);
    }
    let mut text = String::new();
    if live {
        // Home and clear: the view is redrawn in place.
        text.push_str("\x1b[H\x1b[2J");
    }
    text.push_str(&render(snapshot));
    output::print_or_closed(&text)
}

/// The human view: one row per server, then one per operation.
pub fn render(snapshot: &MetricsSnapshot) -> String {
    let mut servers = Table::new(&[
        "SERVER",
        "CALLS",
        "QPS",
        "P50",
        "P99",
        "ERRORS",
        "BREAKER",
        "POOL",
        "CACHE HITS",
        "RECONNECTS",
    ]);
    for server in &snapshot.servers {
        servers.row(vec![
            server.name.clone(),
            server.calls.to_string(),
            format!("{:.1}", server.qps),
            millis(&server.latency, |l| l.p50_us),
            millis(&server.latency, |l| l.p99_us),
            errors(server),
            server.breaker.clone().unwrap_or_else(|| "-".into()),
            server
                .pool
                .as_ref()
                .map(|p| format!("{} busy/{} idle, {} waits", p.in_use, p.idle, p.waits))
                .unwrap_or_else(|| "-".into()),
            server
                .cache
                .hit_rate
                .map(|rate| {
                    format!(
                        "{:.0}% ({}/{})",
                        rate * 100.0,
                        server.cache.hits,
                        server.cache.hits + server.cache.misses
                    )
                })
                .unwrap_or_else(|| "-".into()),
            server.reconnects.to_string(),
        ]);
    }
    let mut operations = Table::new(&[
        "SERVER",
        "OPERATION",
        "CALLS",
        "QPS",
        "P50",
        "P90",
        "P99",
        "MAX",
        "ERRORS BY KIND",
    ]);
    for server in &snapshot.servers {
        for op in &server.operations {
            let name = match &op.tool {
                Some(tool) => format!("{} {tool}", op.method),
                None => op.method.clone(),
            };
            let kinds = if op.errors_by_type.is_empty() {
                "-".to_owned()
            } else {
                op.errors_by_type
                    .iter()
                    .map(|(kind, n)| format!("{kind}={n}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            operations.row(vec![
                server.name.clone(),
                name,
                op.calls.to_string(),
                format!("{:.1}", op.qps),
                millis(&op.latency, |l| l.p50_us),
                millis(&op.latency, |l| l.p90_us),
                millis(&op.latency, |l| l.p99_us),
                millis(&op.latency, |l| l.max_us),
                kinds,
            ]);
        }
    }
    let endpoints = endpoint_table(snapshot);
    format!(
        "{}\n{}{}(QPS over the last {} s; latency in ms)\n",
        servers.render(),
        endpoints,
        operations.render(),
        snapshot.qps_window_seconds
    )
}

/// Servers with several endpoints: one row per endpoint (address, region, state, calls on it,
/// the calls' and the probes' smoothed latency, breaker) and the server's failovers; empty
/// when no server has endpoints.
fn endpoint_table(snapshot: &MetricsSnapshot) -> String {
    if snapshot.servers.iter().all(|s| s.endpoints.is_empty()) {
        return String::new();
    }
    let mut table = Table::new(&[
        "SERVER",
        "ENDPOINT",
        "REGION",
        "STATE",
        "CALLS",
        "ERRORS",
        "CALL EWMA",
        "PROBE EWMA",
        "BREAKER",
        "FAILOVERS",
    ]);
    let ewma = |us: Option<u64>| {
        us.map_or_else(|| "-".to_owned(), |us| format!("{:.2}", us as f64 / 1000.0))
    };
    for server in &snapshot.servers {
        for endpoint in &server.endpoints {
            let address = match (&endpoint.server_address, endpoint.server_port) {
                (Some(host), Some(port)) => format!("{host}:{port}"),
                (Some(host), None) => host.clone(),
                _ => endpoint.url.clone(),
            };
            table.row(vec![
                server.name.clone(),
                address,
                endpoint.region.clone().unwrap_or_else(|| "-".into()),
                endpoint.state.clone().unwrap_or_else(|| "-".into()),
                endpoint.calls.to_string(),
                endpoint.errors.to_string(),
                ewma(endpoint.call_latency_ewma_us),
                ewma(endpoint.probe_latency_ewma_us),
                endpoint.breaker.clone().unwrap_or_else(|| "-".into()),
                server.failovers.to_string(),
            ]);
        }
    }
    format!("{}\n", table.render())
}

fn millis(latency: &LatencySummary, pick: impl Fn(&LatencySummary) -> u64) -> String {
    if latency.count == 0 {
        "-".to_owned()
    } else {
        format!("{:.2}", pick(latency) as f64 / 1000.0)
    }
}

fn errors(server: &ServerSnapshot) -> String {
    if server.calls == 0 {
        return "-".to_owned();
    }
    format!("{} ({:.1}%)", server.errors, server.error_rate * 100.0)
}
