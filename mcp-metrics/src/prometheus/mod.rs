//! Prometheus (feature `prometheus`): the text exposition format
//! ([`Metrics::render_prometheus`](crate::Metrics::render_prometheus)) and a scrape endpoint
//! ([`PrometheusEndpoint`]).

mod endpoint;
mod text;

pub use endpoint::PrometheusEndpoint;
pub(crate) use text::render;

impl crate::Metrics {
    /// Every server's metrics in the Prometheus text exposition format (version 0.0.4):
    ///
    /// | metric | type | labels |
    /// |---|---|---|
    /// | `<prefix>_calls_total`, `_cancelled_total` | counter | `server`, `method`, `tool` (a `tools/call`) |
    /// | `<prefix>_errors_total` | counter | those and `error_type` |
    /// | `<prefix>_operation_duration_seconds` | summary (`quantile` 0.5, 0.9, 0.99; `_sum`, `_count`) | `server`, `method`, `tool` |
    /// | `<prefix>_operation_qps` | gauge (calls/s over the window) | `server`, `method`, `tool` |
    /// | `<prefix>_reconnects_total`, `_token_refreshes_total`, `_failovers_total`, `_sessions_ended_total` | counter | `server` |
    /// | `<prefix>_session_errors_total` | counter | `server`, `error_type` |
    /// | `<prefix>_session_duration_seconds` | summary (`quantile` 0.5; `_sum`, `_count`) | `server` |
    /// | `<prefix>_cache_hits_total`, `_cache_misses_total` | counter | `server`, `cache` |
    /// | `<prefix>_breaker_state` | gauge (1 for the current state) | `server`, `state` |
    /// | `<prefix>_pool_connections`, `_pool_in_use`, `_pool_idle`, `_pool_waiting` | gauge | `server` |
    /// | `<prefix>_pool_waits_total` | counter | `server` |
    /// | `<prefix>_endpoint_calls_total`, `_endpoint_errors_total` | counter | `server`, `url`, `server_address`, `server_port`, `region` (each of the last three when known) |
    /// | `<prefix>_endpoint_call_latency_seconds`, `_endpoint_probe_latency_seconds` | gauge (the moving averages; none before a first sample) | the same |
    /// | `<prefix>_endpoint_active` (1 for the endpoint serving the calls), `_endpoint_up` (0 when `down`, else 1) | gauge | the same |
    /// | `<prefix>_server_info` | gauge (1) | `server`, `network_transport`, `protocol_version` |
    ///
    /// The `endpoint_` families have samples only for the endpoints of servers routed over
    /// several ([`ServerHandle::endpoint`](crate::ServerHandle::endpoint)); their `url` label
    /// keeps two endpoints at one host and port apart.
    ///
    /// The prefix is [`MetricsConfig::prometheus_prefix`](crate::MetricsConfig) (`mcp_client`),
    /// with characters a metric name cannot hold replaced by `_`; label values are escaped.
    pub fn render_prometheus(&self) -> String {
        render(&self.snapshot(), &self.config().prometheus_prefix)
    }
}
