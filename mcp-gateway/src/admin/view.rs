//! What the page shows of one server now ([`ServerView`]): its status report and its metrics,
//! matched by name, and of its endpoints (matched by URL). Only names, transports, states,
//! counters and (redacted) error messages: never a server's configuration.

use std::collections::BTreeMap;

use mcp_client::metrics::{EndpointSnapshot, LatencySummary, ServerSnapshot};
use mcp_client::{BreakerStatus, EndpointReport, ServerReport};
use serde::Serialize;

use super::redact::redact;

/// One server now: the `servers[]` entries of the panel's JSON (see the
/// [module docs](super) for the whole shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ServerView {
    pub(crate) name: String,
    /// `stdio`, `http`, `sse`, `url`, `ws`, `grpc`, …; the metrics' `network.transport`
    /// (`pipe`, `tcp`) when the status report did not say.
    pub(crate) transport: Option<String>,
    /// `starting`, `ready`, `reconnecting`, `unavailable`, `probing`, `needs-auth`,
    /// `stopped`, `disabled`; `unknown` for a server the metrics know and the status does not.
    pub(crate) state: String,
    /// The state with its detail (`reconnecting (attempt 2)`).
    pub(crate) state_detail: String,
    /// Why it is unavailable or needs credentials (redacted).
    pub(crate) reason: Option<String>,
    /// Tools it contributes to the catalog.
    pub(crate) tools: Option<usize>,
    /// `name version` of what the server said it is.
    pub(crate) server_info: Option<String>,
    pub(crate) protocol_version: Option<String>,
    /// `closed`, `open`, `half-open`.
    pub(crate) breaker: Option<String>,
    /// For an open breaker: milliseconds before it admits probes.
    pub(crate) breaker_retry_in_ms: Option<u64>,
    pub(crate) pool: Option<PoolView>,
    /// Cumulative counts since the client started.
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) cancelled: u64,
    /// `errors / calls` since the start.
    pub(crate) error_rate: f64,
    /// Calls per second over the metrics' QPS window.
    pub(crate) qps: f64,
    /// Latency since the start, in microseconds.
    pub(crate) latency: LatencySummary,
    pub(crate) cache_hits: u64,
    pub(crate) cache_misses: u64,
    pub(crate) cache_hit_rate: Option<f64>,
    pub(crate) reconnects: u64,
    pub(crate) failovers: u64,
    pub(crate) token_refreshes: u64,
    /// The last failure the supervisor saw (redacted).
    pub(crate) last_error: Option<String>,
    pub(crate) endpoints: Vec<EndpointView>,
    pub(crate) operations: Vec<OperationView>,
}

/// A server's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct PoolView {
    pub(crate) connections: u64,
    pub(crate) in_use: u64,
    pub(crate) idle: u64,
    pub(crate) waits: u64,
}

/// One endpoint of a server routed over several.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EndpointView {
    /// Without user info, query or fragment.
    pub(crate) url: String,
    pub(crate) region: Option<String>,
    /// `active`, `standby`, `probing`, `down`.
    pub(crate) state: Option<String>,
    pub(crate) active: bool,
    pub(crate) breaker: Option<String>,
    /// Why it is down (redacted).
    pub(crate) down_reason: Option<String>,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) error_rate: f64,
    /// The successful calls' moving average.
    pub(crate) call_latency_us: Option<u64>,
    /// The health probes' moving average.
    pub(crate) probe_latency_us: Option<u64>,
}

/// One method (and tool) of a server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct OperationView {
    pub(crate) method: String,
    pub(crate) tool: Option<String>,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) error_rate: f64,
    pub(crate) qps: f64,
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
    pub(crate) errors_by_type: BTreeMap<String, u64>,
}

/// The servers of `reports` (in their order) with their metrics, then the servers only the
/// metrics know.
pub(crate) fn server_views(
    reports: &[ServerReport],
    metrics: &[ServerSnapshot],
) -> Vec<ServerView> {
    let mut views: Vec<ServerView> = reports
        .iter()
        .map(|report| {
            let snapshot = metrics.iter().find(|m| m.name == report.name);
            ServerView::of(Some(report), snapshot, &report.name)
        })
        .collect();
    for snapshot in metrics {
        if !reports.iter().any(|r| r.name == snapshot.name) {
            views.push(ServerView::of(None, Some(snapshot), &snapshot.name));
        }
    }
    views
}

fn breaker_label(breaker: &BreakerStatus) -> (String, Option<u64>) {
    let retry_in = match breaker {
        BreakerStatus::Open { retry_in } => {
            Some(u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX))
        }
        _ => None,
    };
    (breaker.label().to_owned(), retry_in)
}

impl ServerView {
    fn of(
        report: Option<&ServerReport>,
        metrics: Option<&ServerSnapshot>,
        name: &str,
    ) -> ServerView {
        let (breaker, breaker_retry_in_ms) = match report.and_then(|r| r.breaker.as_ref()) {
            Some(breaker) => {
                let (label, retry) = breaker_label(breaker);
                (Some(label), retry)
            }
            None => (metrics.and_then(|m| m.breaker.clone()), None),
        };
        let pool = match (report.and_then(|r| r.pool), metrics.and_then(|m| m.pool)) {
            (_, Some(gauges)) => Some(PoolView {
                connections: gauges.connections,
                in_use: gauges.in_use,
                idle: gauges.idle,
                waits: gauges.waits,
            }),
            (Some(pool), None) => Some(PoolView {
                connections: u64::from(pool.connections),
                in_use: u64::from(pool.in_use),
                idle: u64::from(pool.idle),
                waits: pool.waits,
            }),
            (None, None) => None,
        };
        let reports_endpoints: &[EndpointReport] = report.map_or(&[], |r| &r.endpoints[..]);
        let metrics_endpoints: &[EndpointSnapshot] = metrics.map_or(&[], |m| &m.endpoints[..]);
        let latency = metrics.map(|m| m.latency).unwrap_or_default();
        ServerView {
            name: name.to_owned(),
            transport: report
                .map(|r| r.transport.clone())
                .or_else(|| metrics.and_then(|m| m.network_transport.clone())),
            state: report.map_or_else(|| "unknown".to_owned(), |r| r.status.label().to_owned()),
            state_detail: report.map_or_else(|| "unknown".to_owned(), |r| r.status.to_string()),
            reason: report.and_then(|r| r.status.reason()).map(redact),
            tools: report.map(|r| r.tools),
            server_info: report
                .and_then(|r| r.server_info.as_ref())
                .map(|info| redact(&format!("{} {}", info.name, info.version))),
            protocol_version: report
                .and_then(|r| r.protocol_version.as_ref())
                .map(ToString::to_string)
                .or_else(|| metrics.and_then(|m| m.protocol_version.clone())),
            breaker,
            breaker_retry_in_ms,
            pool,
            calls: metrics.map_or(0, |m| m.calls),
            errors: metrics.map_or(0, |m| m.errors),
            cancelled: metrics.map_or(0, |m| m.cancelled),
            error_rate: metrics.map_or(0.0, |m| m.error_rate),
            qps: metrics.map_or(0.0, |m| m.qps),
            latency,
            cache_hits: metrics.map_or(0, |m| m.cache.hits),
            cache_misses: metrics.map_or(0, |m| m.cache.misses),
            cache_hit_rate: metrics.and_then(|m| m.cache.hit_rate),
            reconnects: metrics
                .map_or(0, |m| m.reconnects)
                .max(report.map_or(0, |r| r.reconnects)),
            failovers: metrics.map_or(0, |m| m.failovers),
            token_refreshes: metrics.map_or(0, |m| m.token_refreshes),
            last_error: report.and_then(|r| r.last_error.as_deref()).map(redact),
            endpoints: endpoint_views(reports_endpoints, metrics_endpoints),
            operations: metrics.map_or_else(Vec::new, |m| {
                m.operations
                    .iter()
                    .map(|op| OperationView {
                        method: op.method.clone(),
                        tool: op.tool.clone(),
                        calls: op.calls,
                        errors: op.errors,
                        error_rate: op.error_rate,
                        qps: op.qps,
                        p50_us: op.latency.p50_us,
                        p99_us: op.latency.p99_us,
                        errors_by_type: op.errors_by_type.clone(),
                    })
                    .collect()
            }),
        }
    }
}

/// The endpoints the status reports (in its order) with their records, then those only the
/// metrics know.
fn endpoint_views(reports: &[EndpointReport], metrics: &[EndpointSnapshot]) -> Vec<EndpointView> {
    let mut views: Vec<EndpointView> = reports
        .iter()
        .map(|report| {
            let record = metrics.iter().find(|m| m.url == report.url);
            let (breaker, _) = report
                .breaker
                .as_ref()
                .map(breaker_label)
                .map_or((None, None), |(label, retry)| (Some(label), retry));
            EndpointView {
                url: redact(&report.url),
                region: report.region.clone(),
                state: Some(report.state.label().to_owned()),
                active: report.active,
                breaker: breaker.or_else(|| record.and_then(|m| m.breaker.clone())),
                down_reason: report.down_reason.as_deref().map(redact),
                calls: record.map_or(0, |m| m.calls),
                errors: record.map_or(0, |m| m.errors),
                error_rate: record.map_or(0.0, |m| ratio(m.errors, m.calls).unwrap_or(0.0)),
                call_latency_us: record.and_then(|m| m.call_latency_ewma_us),
                probe_latency_us: record.and_then(|m| m.probe_latency_ewma_us).or_else(|| {
                    report
                        .latency
                        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
                }),
            }
        })
        .collect();
    for record in metrics {
        if !reports.iter().any(|r| r.url == record.url) {
            views.push(EndpointView {
                url: redact(&record.url),
                region: record.region.clone(),
                state: record.state.clone(),
                active: record.active,
                breaker: record.breaker.clone(),
                down_reason: None,
                calls: record.calls,
                errors: record.errors,
                error_rate: ratio(record.errors, record.calls).unwrap_or(0.0),
                call_latency_us: record.call_latency_ewma_us,
                probe_latency_us: record.probe_latency_ewma_us,
            });
        }
    }
    views
}

/// `part / whole`, `None` when `whole` is 0.
pub(crate) fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}
