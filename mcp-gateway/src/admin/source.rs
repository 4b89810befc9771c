//! [`PanelSource`]: where the panel reads what it shows — every server's status and the
//! metrics — so that `mcph stats --web` and `mcph serve --admin` (both over an
//! [`McpClient`]) and tests (over anything) share one panel.

use std::sync::Arc;

use mcp_client::metrics::MetricsSnapshot;
use mcp_client::{McpClient, ServerReport};

/// What the panel reads, once per interval and on every `/metrics` scrape. Implemented for
/// [`McpClient`] (and for an `Arc` of any source).
///
/// The methods are called on the runtime's threads and must not block: each should take
/// a few locks and copy, as [`McpClient::servers`] and [`McpClient::metrics`] do.
///
/// ```
/// use mcp_client::metrics::{Metrics, MetricsSnapshot};
/// use mcp_client::ServerReport;
/// use mcp_gateway::admin::PanelSource;
///
/// /// A panel over a bare metrics registry: no supervisor, so no server states.
/// struct RegistryOnly(Metrics);
///
/// impl PanelSource for RegistryOnly {
///     fn servers(&self) -> Vec<ServerReport> {
///         Vec::new()
///     }
///     fn metrics(&self) -> MetricsSnapshot {
///         self.0.snapshot()
///     }
///     fn prometheus(&self) -> String {
///         self.0.render_prometheus()
///     }
/// }
/// ```
pub trait PanelSource: Send + Sync + 'static {
    /// Every server with its state, breaker, pool and endpoints, in the order to show them.
    /// Only names, transports and states are shown of it (never a server's configuration).
    fn servers(&self) -> Vec<ServerReport>;

    /// Every server's metrics now ([`mcp_client::metrics::Metrics::snapshot`]).
    fn metrics(&self) -> MetricsSnapshot;

    /// The metrics in the Prometheus text exposition format
    /// ([`mcp_client::metrics::Metrics::render_prometheus`]), served at `GET /metrics`.
    fn prometheus(&self) -> String;
}

impl PanelSource for McpClient {
    fn servers(&self) -> Vec<ServerReport> {
        McpClient::servers(self)
    }

    fn metrics(&self) -> MetricsSnapshot {
        McpClient::metrics(self)
    }

    fn prometheus(&self) -> String {
        self.metrics_registry().render_prometheus()
    }
}

impl<S: PanelSource + ?Sized> PanelSource for Arc<S> {
    fn servers(&self) -> Vec<ServerReport> {
        (**self).servers()
    }

    fn metrics(&self) -> MetricsSnapshot {
        (**self).metrics()
    }

    fn prometheus(&self) -> String {
        (**self).prometheus()
    }
}
