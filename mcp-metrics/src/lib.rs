//! `mcp-metrics`: what every MCP call did — per server, method and tool — as a layer around
//! any [`mcp_core::McpService`], readable in process and exported through OpenTelemetry and
//! Prometheus.
//!
//! | module | what it holds |
//! |---|---|
//! | [`registry`] | [`Metrics`], the registry (one per client; a cheap `Clone`), and [`ServerHandle`], what the facade records a server's reconnects, token refreshes, failovers, cache lookups, sessions, protocol version, address and region through |
//! | [`endpoint`] | [`EndpointHandle`] ([`ServerHandle::endpoint`]): one endpoint of a server routed over several — its attempts, errors and their latency average, its health probes and their clamped average — what the router reads and snapshots show per endpoint |
//! | [`layer`] | [`MetricsLayer`]: per call, its count, outcome (errors by [`ErrorKind`](mcp_core::ErrorKind) name; `tool_error` for a result with `isError: true`; `cancelled`), latency and rate |
//! | [`gauges`] | [`GaugeSource`]: breaker state, pool occupancy and each endpoint's routing state ([`EndpointGauges`]), read at snapshot time |
//! | [`cache`] | [`CacheKind`]: the facade's caches |
//! | [`snapshot`] | [`MetricsSnapshot`]: servers in registration order, each with a summary over its operations, its endpoints ([`EndpointSnapshot`]: records and gauges matched by URL) and its operations sorted |
//! | `otel` | (feature `opentelemetry`) `mcp.client.operation.duration`, `mcp.client.session.duration`, client spans and the W3C trace context in `params._meta` |
//! | `prometheus` | (feature `prometheus`) `Metrics::render_prometheus` and `PrometheusEndpoint` |
//! | `latency`, `window`, `series`, `server`, `call_end` | (private) hdrhistogram at µs resolution, the QPS window, one series, one server, how a call ended |
//! | `clock` | (private) the registry's clock: the CPU's counter, or tokio's clock when a test has paused it |
//!
//! # Using it
//!
//! ```
//! # async fn run(session: mcp_session::ClientSession) -> Result<(), mcp_core::Error> {
//! use std::time::Duration;
//! use mcp_core::{Layer, McpServiceExt, RequestOptions};
//! use mcp_metrics::{CacheKind, Metrics};
//!
//! let metrics = Metrics::new();
//! // Outermost in the server's stack: one call as its caller sees it.
//! let github = metrics.layer("github", "tcp").layer(session);
//! github.call_tool("search", None, RequestOptions::new()).await?;
//!
//! // What the layer cannot see, the facade tells the server's handle.
//! let handle = metrics.server("github");
//! handle.set_protocol_version(Some("2025-11-25"));
//! handle.cache(CacheKind::Tools, true);
//! handle.reconnected();
//! handle.session_ended(Duration::from_secs(600), Some("network_error"));
//!
//! let snapshot = metrics.snapshot();
//! let server = snapshot.server("github").expect("registered");
//! println!("{} calls, {:.1}% errors, p99 {} µs", server.calls, server.error_rate * 100.0, server.latency.p99_us);
//! # Ok(()) }
//! ```
//!
//! # Costs
//!
//! A call through the layer costs a lookup by borrowed keys in a lock-free table, two reads of
//! the CPU's counter, one short spin lock (counts, the histogram record and the QPS window)
//! and its boxed future — the `layer_call` bench measures it against the same call without
//! the layer (target: < 100 ns). Each (server, method, tool) series holds a
//! histogram of about 16 KiB once it has seen latencies from microseconds to seconds; each
//! server's table takes 32 KiB up front for its 1024 series (the default cap). Nothing here
//! spawns a task but the Prometheus endpoint, whose handle owns it.
//!
//! A routed server's facade also records each attempt on its endpoint:
//! [`EndpointHandle::record_call`] is, for a success, one relaxed atomic addition and one
//! compare-and-swap loop on the latency average (two additions for a failure, which leaves
//! the average alone), all on the endpoint's own cache line — no lock, no allocation, no
//! clock read (the caller measured the latency). The `layer_call` bench's
//! `endpoint/record_call` row measures it (target: < 50 ns): 14–20 ns on a loaded two-core
//! machine, about 43 instructions (callgrind). Threads recording on one endpoint at once
//! share its cache line, and a compare-and-swap that lost the race is retried. A server keeps
//! 64 endpoints at most.

#![warn(missing_docs)]

pub mod cache;
mod call_end;
mod clock;
mod config;
pub mod endpoint;
pub mod gauges;
mod latency;
pub mod layer;
#[cfg(feature = "opentelemetry")]
pub mod otel;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod registry;
mod series;
mod server;
pub mod snapshot;
mod window;

pub use cache::CacheKind;
pub use config::MetricsConfig;
pub use endpoint::{CallStart, EndpointHandle, EndpointInfo};
pub use gauges::{EndpointGauges, GaugeSource, PoolGauges, ServerGauges};
pub use latency::LatencySummary;
pub use layer::{MetricsLayer, MetricsService};
#[cfg(feature = "prometheus")]
pub use prometheus::PrometheusEndpoint;
pub use registry::{Metrics, ServerHandle};
pub use snapshot::{
    CacheRow, CacheSnapshot, EndpointSnapshot, MetricsSnapshot, OperationSnapshot, ServerSnapshot,
    SessionSnapshot,
};
