//! The in-process snapshot: what `mcph stats`, the breaker and the router read. Field names
//! are stable (they are the `--json` output); durations are in microseconds (`_us`) for calls
//! and seconds (`_seconds`) for sessions.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cache::CacheKind;
use crate::endpoint::EndpointRecord;
use crate::gauges::{EndpointGauges, PoolGauges, ServerGauges};
use crate::latency::{Latency, LatencySummary};
use crate::server::ServerMetrics;
use crate::MetricsConfig;

/// Every server's metrics at one moment ([`Metrics::snapshot`](crate::Metrics::snapshot)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricsSnapshot {
    /// The window the `qps` fields are measured over (a series younger than the window: its
    /// calls so far over its age in whole seconds, at least one).
    pub qps_window_seconds: u64,
    /// Servers in registration order.
    pub servers: Vec<ServerSnapshot>,
}

impl MetricsSnapshot {
    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&ServerSnapshot> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// One server's metrics: a summary over its operations, its own counters and gauges, and its
/// operations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSnapshot {
    /// The server's name.
    pub name: String,
    /// Its `network.transport`, once a layer was made for it.
    pub network_transport: Option<String>,
    /// The protocol version its sessions negotiated, when the facade said.
    pub protocol_version: Option<String>,
    /// Its host, when the facade said.
    pub server_address: Option<String>,
    /// Its port, when the facade said.
    pub server_port: Option<u16>,
    /// The region of the endpoint serving its calls, when the facade said (a routed server).
    pub region: Option<String>,
    /// Calls that ended, over all operations (cancelled ones included).
    pub calls: u64,
    /// Calls that failed (tool errors included).
    pub errors: u64,
    /// Calls their callers abandoned.
    pub cancelled: u64,
    /// `errors / calls` (0 without calls).
    pub error_rate: f64,
    /// Calls per second over the window.
    pub qps: f64,
    /// Latency over all operations (their histograms merged).
    pub latency: LatencySummary,
    /// Cache lookups.
    pub cache: CacheSnapshot,
    /// The breaker's state, from the gauge source.
    pub breaker: Option<String>,
    /// The pool's occupancy, from the gauge source.
    pub pool: Option<PoolGauges>,
    /// New sessions after a lost one.
    pub reconnects: u64,
    /// Access tokens refreshed.
    pub token_refreshes: u64,
    /// Moves of its traffic from one endpoint to another.
    pub failovers: u64,
    /// Ended sessions.
    pub sessions: SessionSnapshot,
    /// Its endpoints, in registration order (none unless it is routed over several).
    pub endpoints: Vec<EndpointSnapshot>,
    /// Per method and tool, sorted by method then tool.
    pub operations: Vec<OperationSnapshot>,
}

/// One server × method × tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperationSnapshot {
    /// The JSON-RPC method.
    pub method: String,
    /// The tool, for `tools/call` (`_other` past the series cap).
    pub tool: Option<String>,
    /// Calls that ended (cancelled ones included).
    pub calls: u64,
    /// Calls that failed (tool errors included).
    pub errors: u64,
    /// Calls their callers abandoned (neither errors nor in the latency).
    pub cancelled: u64,
    /// `errors / calls` (0 without calls).
    pub error_rate: f64,
    /// Errors by `error.type`: an [`ErrorKind`](mcp_core::ErrorKind)'s name (a
    /// `tools/call` result with `isError: true` is `tool_error`), only those seen.
    pub errors_by_type: BTreeMap<String, u64>,
    /// Calls per second over the window.
    pub qps: f64,
    /// Latency of the calls that ended (successes and errors).
    pub latency: LatencySummary,
}

/// One endpoint of a routed server: what its record holds and, when the gauge source gave
/// them, its routing state. Latencies are exponentially weighted averages (see
/// [`EndpointHandle`](crate::EndpointHandle)), in whole microseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointSnapshot {
    /// Its URL (redacted by the facade).
    pub url: String,
    /// Its host.
    pub server_address: Option<String>,
    /// Its port.
    pub server_port: Option<u16>,
    /// The region it is deployed in.
    pub region: Option<String>,
    /// The router's state for it (`active`, `standby`, `probing`, `down`), from the gauge
    /// source.
    pub state: Option<String>,
    /// Whether it serves the server's calls now (false without gauges).
    pub active: bool,
    /// Its breaker's state, from the gauge source.
    pub breaker: Option<String>,
    /// Attempts sent to it that ended.
    pub calls: u64,
    /// Those that failed.
    pub errors: u64,
    /// The successful attempts' average latency, `None` before the first.
    pub call_latency_ewma_us: Option<u64>,
    /// Health probes that ended.
    pub probes: u64,
    /// Those that failed.
    pub probe_failures: u64,
    /// The answered probes' average round trip, `None` before the first.
    pub probe_latency_ewma_us: Option<u64>,
    /// Answered probes in that average.
    pub probe_samples: u64,
}

impl EndpointSnapshot {
    fn of(record: &EndpointRecord, gauges: Option<&EndpointGauges>) -> EndpointSnapshot {
        let reading = record.read();
        let micros = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let info = &record.info;
        EndpointSnapshot {
            url: info.url.clone(),
            server_address: info.address.clone(),
            server_port: info.port,
            region: info.region.clone(),
            state: gauges
                .filter(|g| !g.state.is_empty())
                .map(|g| g.state.to_string()),
            active: gauges.is_some_and(|g| g.active),
            breaker: gauges.and_then(|g| g.breaker.as_deref().map(str::to_owned)),
            calls: reading.calls,
            errors: reading.errors,
            call_latency_ewma_us: reading.call_latency.map(micros),
            probes: reading.probes,
            probe_failures: reading.probe_failures,
            probe_latency_ewma_us: reading.probe_latency.map(micros),
            probe_samples: reading.probe_samples,
        }
    }
}

/// A server's cache lookups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheSnapshot {
    /// Hits over all caches.
    pub hits: u64,
    /// Misses over all caches.
    pub misses: u64,
    /// `hits / (hits + misses)`, `None` before any lookup.
    pub hit_rate: Option<f64>,
    /// Per cache, in [`CacheKind::ALL`] order (every cache, looked up or not).
    pub caches: Vec<CacheRow>,
}

/// One cache's lookups.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheRow {
    /// Which cache.
    pub cache: CacheKind,
    /// Hits.
    pub hits: u64,
    /// Misses.
    pub misses: u64,
    /// `hits / (hits + misses)`, `None` before any lookup.
    pub hit_rate: Option<f64>,
}

/// A server's ended sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSnapshot {
    /// Sessions that ended.
    pub ended: u64,
    /// Those that ended in an error.
    pub errors: u64,
    /// Errors by the type the facade gave.
    pub errors_by_type: BTreeMap<String, u64>,
    /// Total duration of the ended sessions.
    pub duration_sum_seconds: f64,
    /// Median duration.
    pub duration_p50_seconds: f64,
    /// Longest duration.
    pub duration_max_seconds: f64,
}

fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn hit_rate(hits: u64, misses: u64) -> Option<f64> {
    let lookups = hits + misses;
    (lookups > 0).then(|| hits as f64 / lookups as f64)
}

impl ServerSnapshot {
    pub(crate) fn of(server: &ServerMetrics, second: u64, config: &MetricsConfig) -> Self {
        let mut merged = Latency::micros(config.significant_figures);
        let (mut calls, mut errors, mut cancelled, mut qps) = (0, 0, 0, 0.0);
        let operations = server
            .all_series()
            .iter()
            .map(|series| {
                let reading = series.read(second, &mut merged);
                let series_errors = reading.errors();
                calls += reading.calls;
                errors += series_errors;
                cancelled += reading.cancelled;
                qps += reading.qps;
                OperationSnapshot {
                    method: series.method.to_string(),
                    tool: series.tool.as_deref().map(str::to_owned),
                    calls: reading.calls,
                    errors: series_errors,
                    cancelled: reading.cancelled,
                    error_rate: rate(series_errors, reading.calls),
                    errors_by_type: reading
                        .errors_by_type
                        .iter()
                        .map(|(name, n)| ((*name).to_owned(), *n))
                        .collect(),
                    qps: reading.qps,
                    latency: reading.latency,
                }
            })
            .collect();

        let caches: Vec<CacheRow> = CacheKind::ALL
            .iter()
            .map(|&cache| {
                let (hits, misses) = server.caches.get(cache);
                CacheRow {
                    cache,
                    hits,
                    misses,
                    hit_rate: hit_rate(hits, misses),
                }
            })
            .collect();
        let hits = caches.iter().map(|c| c.hits).sum();
        let misses = caches.iter().map(|c| c.misses).sum();

        let sessions = mcp_core::sync::lock(&server.sessions).clone();
        let durations = sessions.durations.summary();
        let seconds = |ms: u64| ms as f64 / 1_000.0;

        // Outside every lock: the source may take its own.
        let ServerGauges {
            breaker,
            pool,
            endpoints: endpoint_gauges,
        } = server
            .gauge_source()
            .map(|source| source.gauges())
            .unwrap_or_default();
        let endpoints = server
            .endpoints()
            .iter()
            .map(|record| {
                let gauges = endpoint_gauges.iter().find(|g| g.url == record.info.url);
                EndpointSnapshot::of(record, gauges)
            })
            .collect();
        let info = server.info();
        let text = |s: &Option<std::sync::Arc<str>>| s.as_deref().map(str::to_owned);
        ServerSnapshot {
            name: server.name.to_string(),
            network_transport: text(&info.network_transport),
            protocol_version: text(&info.protocol_version),
            server_address: text(&info.address),
            server_port: info.port,
            region: text(&info.region),
            calls,
            errors,
            cancelled,
            error_rate: rate(errors, calls),
            qps,
            latency: merged.summary(),
            cache: CacheSnapshot {
                hits,
                misses,
                hit_rate: hit_rate(hits, misses),
                caches,
            },
            breaker: breaker.map(|b| b.into_owned()),
            pool,
            reconnects: server.reconnects.load(std::sync::atomic::Ordering::Relaxed),
            token_refreshes: server
                .token_refreshes
                .load(std::sync::atomic::Ordering::Relaxed),
            failovers: server.failovers.load(std::sync::atomic::Ordering::Relaxed),
            sessions: SessionSnapshot {
                ended: sessions.ended,
                errors: sessions.by_error_type.values().sum(),
                errors_by_type: sessions
                    .by_error_type
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
                duration_sum_seconds: seconds(durations.sum_us),
                duration_p50_seconds: seconds(durations.p50_us),
                duration_max_seconds: seconds(durations.max_us),
            },
            endpoints,
            operations,
        }
    }

    /// The endpoint at `url`.
    pub fn endpoint(&self, url: &str) -> Option<&EndpointSnapshot> {
        self.endpoints.iter().find(|e| e.url == url)
    }

    /// The operation `method` (and `tool`).
    pub fn operation(&self, method: &str, tool: Option<&str>) -> Option<&OperationSnapshot> {
        self.operations
            .iter()
            .find(|o| o.method == method && o.tool.as_deref() == tool)
    }
}
